#!/usr/bin/env node
// Regenerates src/testing/kubevirt/kubevirt-crds.json from a KubeVirt release fetched through the Go module proxy:
// the schemas from validations_generated.go, everything else about each CRD from crds.go (and the kubevirt.io
// API versions from kubevirt.io/api). Usage: node scripts/refresh-kubevirt-crds.mjs [version], default v1.9.0.
// The same release always gives the same file, byte for byte.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';

const version = process.argv[2] ?? 'v1.9.0';
const output = join(dirname(fileURLToPath(import.meta.url)), '../src/testing/kubevirt/kubevirt-crds.json');

// The kinds the SDK and the simulator read or write; their API names are the ones the SDK is written against.
const kinds = [
  {
    constructor: 'NewVirtualMachineCrd',
    group: 'kubevirt.io',
    kind: 'VirtualMachine',
    plural: 'virtualmachines',
  },
  {
    constructor: 'NewVirtualMachineInstanceCrd',
    group: 'kubevirt.io',
    kind: 'VirtualMachineInstance',
    plural: 'virtualmachineinstances',
  },
  { constructor: 'NewKubeVirtCrd', group: 'kubevirt.io', kind: 'KubeVirt', plural: 'kubevirts' },
  {
    constructor: 'NewVirtualMachineCloneCrd',
    group: 'clone.kubevirt.io',
    kind: 'VirtualMachineClone',
    plural: 'virtualmachineclones',
  },
];

function fail(message) {
  console.error(`refresh-kubevirt-crds: ${message}`);
  process.exit(1);
}

function moduleDir(path) {
  const answer = execFileSync('go', ['mod', 'download', '-json', `${path}@${version}`], {
    encoding: 'utf8',
    env: { ...process.env, GOFLAGS: '-mod=mod' },
  });
  const info = JSON.parse(answer);
  if (info.Error || !info.Dir)
    fail(`go mod download ${path}@${version}: ${info.Error ?? 'no Dir in the answer'}`);
  return info;
}

// ---- a reader for the few Go expressions crds.go builds its CRDs from ----

function tokenize(source) {
  const tokens = [];
  const pattern =
    /\s+|\/\/[^\n]*|"((?:[^"\\]|\\.)*)"|`([^`]*)`|(-?\d+)\b|(&?(?:\[\])?[A-Za-z_][\w.]*)|([{}(),:])/y;
  while (pattern.lastIndex < source.length) {
    const start = pattern.lastIndex;
    const match = pattern.exec(source);
    if (match === null) fail(`cannot read Go near: ${source.slice(start, start + 60)}`);
    const [, quoted, raw, number, word, punctuation] = match;
    if (quoted !== undefined) tokens.push({ string: JSON.parse(`"${quoted}"`) });
    else if (raw !== undefined) tokens.push({ string: raw });
    else if (number !== undefined) tokens.push({ number: Number(number) });
    else if (word !== undefined) tokens.push({ word });
    else if (punctuation !== undefined) tokens.push({ punctuation });
  }
  return tokens;
}

// Parses one value: a literal, a name, a call, or a composite literal `Type{…}` (keyed → object, else array).
function parseValue(tokens, at) {
  const token = tokens[at];
  if (token === undefined) fail('unexpected end of Go expression');
  if (token.string !== undefined) return [{ literal: token.string }, at + 1];
  if (token.number !== undefined) return [{ literal: token.number }, at + 1];
  if (token.punctuation === '{') return parseComposite(undefined, tokens, at);
  if (token.word === undefined) fail(`unexpected ${JSON.stringify(token)} in Go expression`);
  const next = tokens[at + 1];
  if (next?.punctuation === '{') return parseComposite(token.word, tokens, at + 1);
  if (next?.punctuation === '(') {
    const args = [];
    let cursor = at + 2;
    while (tokens[cursor]?.punctuation !== ')') {
      const [arg, after] = parseValue(tokens, cursor);
      args.push(arg);
      cursor = tokens[after]?.punctuation === ',' ? after + 1 : after;
    }
    return [{ call: token.word, args }, cursor + 1];
  }
  if (token.word === 'true' || token.word === 'false') return [{ literal: token.word === 'true' }, at + 1];
  return [{ name: token.word }, at + 1];
}

function parseComposite(type, tokens, at) {
  const fields = {};
  const items = [];
  let cursor = at + 1;
  while (tokens[cursor]?.punctuation !== '}') {
    if (tokens[cursor]?.word !== undefined && tokens[cursor + 1]?.punctuation === ':') {
      const [value, after] = parseValue(tokens, cursor + 2);
      fields[tokens[cursor].word] = value;
      cursor = after;
    } else {
      const [value, after] = parseValue(tokens, cursor);
      items.push(value);
      cursor = after;
    }
    if (tokens[cursor]?.punctuation === ',') cursor += 1;
  }
  return [{ type, fields, items }, cursor + 1];
}

function parseGo(source) {
  const [value] = parseValue(tokenize(source), 0);
  return value;
}

// The text of `func name(…) … {` up to its closing brace at the start of a line.
function functionBody(source, name) {
  const start = source.indexOf(`\nfunc ${name}(`);
  if (start < 0) fail(`crds.go has no func ${name}`);
  const end = source.indexOf('\n}\n', start);
  return source.slice(start, end + 3);
}

// The Go expression that starts where `prefix` (a regular expression) ends in `text`, up to its balanced end.
function expressionAfter(text, prefix, what) {
  const found = prefix.exec(text);
  if (found === null) fail(`${what}: nothing matches ${prefix}`);
  const start = found.index + found[0].length;
  let depth = 0;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index];
    if (char === '"') {
      for (index += 1; text[index] !== '"'; index += 1) if (text[index] === '\\') index += 1;
    } else if (char === '{' || char === '(') depth += 1;
    else if (char === '}' || char === ')') {
      depth -= 1;
      if (depth === 0) return text.slice(start, index + 1);
    } else if (depth === 0 && (char === ',' || char === '\n')) return text.slice(start, index);
  }
  fail(`${what}: unterminated expression after ${prefix}`);
}

function stringConstants(source) {
  const constants = {};
  for (const match of source.matchAll(/^\s*(\w+)\s*(?:string\s*)?=\s*"((?:[^"\\]|\\.)*)"\s*$/gm)) {
    constants[match[1]] = JSON.parse(`"${match[2]}"`);
  }
  return constants;
}

// Import alias → the last element of its path (`clonev1beta1 "kubevirt.io/api/clone/v1beta1"` → v1beta1).
function importVersions(source) {
  const aliases = {};
  for (const match of source.matchAll(/^\s*(\w+)\s+"[\w./-]+\/(v\d\w*)"\s*$/gm)) aliases[match[1]] = match[2];
  return aliases;
}

function evaluate(value, context, what) {
  if (value.literal !== undefined) return value.literal;
  if (value.call === 'pointer.P' || value.call === 'pointer.String') {
    return evaluate(value.args[0], context, what);
  }
  if (value.name !== undefined) {
    if (value.name in context.constants) return context.constants[value.name];
    const version = /^(\w+)\.SchemeGroupVersion\.Version$/.exec(value.name);
    if (version && context.importVersions[version[1]]) return context.importVersions[version[1]];
    if (value.name === 'extv1.NamespaceScoped') return 'Namespaced';
  }
  fail(`${what}: cannot evaluate ${JSON.stringify(value)}`);
}

// Go field names of the structs read here → their JSON names; anything else stops the script.
const jsonNames = {
  Name: 'name',
  Type: 'type',
  Format: 'format',
  Description: 'description',
  Priority: 'priority',
  JSONPath: 'jsonPath',
  Served: 'served',
  Storage: 'storage',
  Deprecated: 'deprecated',
  DeprecationWarning: 'deprecationWarning',
};

function structToJson(value, context, what) {
  const json = {};
  for (const [field, fieldValue] of Object.entries(value.fields)) {
    const name = jsonNames[field];
    if (name === undefined) fail(`${what}: unknown field ${field}`);
    json[name] = evaluate(fieldValue, context, `${what}.${field}`);
  }
  if (value.items.length > 0) fail(`${what}: unexpected positional values`);
  return json;
}

function stringList(body, field, what) {
  const list = parseGo(expressionAfter(body, new RegExp(`\\b${field}:\\s*`), what));
  if (list.type !== '[]string') fail(`${what}: ${field} is not a []string`);
  return list.items.map((item) => evaluate(item, { constants: {}, importVersions: {} }, `${what}.${field}`));
}

function subresourcesToJson(value, what) {
  const json = {};
  for (const [field, fieldValue] of Object.entries(value.fields)) {
    if (field !== 'Status' || fieldValue.type !== '&extv1.CustomResourceSubresourceStatus') {
      fail(`${what}: subresource ${field} is not read by this script`);
    }
    json.status = {};
  }
  return json;
}

function readCrd(entry, context) {
  const what = entry.constructor;
  const body = functionBody(context.crdsSource, entry.constructor);
  const singular = entry.kind.toLowerCase();

  const versionsExpression = expressionAfter(body, /\bVersions:\s*/, what).trim();
  const versionValues =
    versionsExpression === 'newCRDVersions()'
      ? context.apiSupportedVersions
      : parseGo(versionsExpression).items.map((item) => structToJson(item, context, `${what} version`));

  const fieldsCall = parseGo(
    `addFieldsToAllVersions${expressionAfter(body, /\baddFieldsToAllVersions/, what)}`,
  );
  let columns = [];
  let subresources;
  for (const argument of fieldsCall.args.slice(1)) {
    if (argument.type === '[]extv1.CustomResourceColumnDefinition') {
      columns = argument.items.map((item) => structToJson(item, context, `${what} column`));
    } else if (argument.type === '&extv1.CustomResourceSubresources') {
      subresources = subresourcesToJson(argument, what);
    } else
      fail(
        `${what}: addFieldsToAllVersions takes ${JSON.stringify(argument)}, which this script cannot read`,
      );
  }
  if (!body.includes('patchValidationForAllVersions(crd)'))
    fail(`${what}: not every version gets the schema`);
  const schema = context.schemas[singular];
  if (schema === undefined) fail(`validations_generated.go has no "${singular}"`);

  const labels = /crd := newBlankCrd\(\)/.test(body)
    ? { [context.appLabel]: '' }
    : Object.fromEntries(
        [...expressionAfter(body, /\bLabels:\s*/, what).matchAll(/"([^"]+)":\s*"([^"]*)"/g)].map((m) => [
          m[1],
          m[2],
        ]),
      );
  const scope = evaluate(parseGo(expressionAfter(body, /\bScope:\s*/, what)), context, `${what}.Scope`);

  const versions = versionValues.map((value) => ({
    name: value.name,
    served: value.served ?? false,
    storage: value.storage ?? false,
    ...(value.deprecated ? { deprecated: true } : {}),
    ...(value.deprecationWarning === undefined ? {} : { deprecationWarning: value.deprecationWarning }),
    ...(columns.length > 0 ? { additionalPrinterColumns: columns } : {}),
    ...(subresources === undefined ? {} : { subresources }),
  }));
  return {
    definition: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `${entry.plural}.${entry.group}`, labels },
      spec: {
        group: entry.group,
        names: {
          kind: entry.kind,
          listKind: `${entry.kind}List`,
          plural: entry.plural,
          singular,
          shortNames: stringList(body, 'ShortNames', what),
          categories: stringList(body, 'Categories', what),
        },
        scope,
        versions,
      },
    },
    openAPIV3Schema: schema,
  };
}

// YAML 1.1 (which KubeVirt's decoder follows) and YAML 1.2 (js-yaml) disagree on these plain scalars.
const yaml11Only = /^\s*(?:-\s+|[\w$.-]+:\s+)(y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|<<)\s*$/m;

function readSchemas(source) {
  const schemas = {};
  for (const match of source.matchAll(/^\t"(\w+)": `([^`]*)`,$/gm)) {
    const [, key, text] = match;
    const ambiguous = yaml11Only.exec(text);
    if (ambiguous)
      fail(`schema ${key} has the plain scalar "${ambiguous[1]}", which YAML 1.1 reads otherwise`);
    const validation = yaml.load(text, { schema: yaml.CORE_SCHEMA });
    if (validation?.openAPIV3Schema === undefined) fail(`schema ${key} has no openAPIV3Schema`);
    schemas[key] = validation.openAPIV3Schema;
  }
  return schemas;
}

const kubevirtModule = moduleDir('kubevirt.io/kubevirt');
const apiModule = moduleDir('kubevirt.io/api');
const componentsDir = join(kubevirtModule.Dir, 'pkg/virt-operator/resource/generate/components');
const crdsSource = readFileSync(join(componentsDir, 'crds.go'), 'utf8');
const registerSource = readFileSync(join(apiModule.Dir, 'core/v1/register.go'), 'utf8');
const typesSource = readFileSync(join(apiModule.Dir, 'core/v1/types.go'), 'utf8');

const apiContext = { constants: {}, importVersions: {} };
const supported = parseGo(expressionAfter(registerSource, /\bApiSupportedVersions\s*=\s*/, 'register.go'));
const context = {
  crdsSource,
  constants: stringConstants(crdsSource),
  importVersions: importVersions(crdsSource),
  apiSupportedVersions: supported.items.map((item) => structToJson(item, apiContext, 'ApiSupportedVersions')),
  appLabel: stringConstants(typesSource).AppLabel ?? fail('types.go has no AppLabel'),
  schemas: readSchemas(readFileSync(join(componentsDir, 'validations_generated.go'), 'utf8')),
};

const data = {
  comment:
    "KubeVirt's own CustomResourceDefinitions, carried verbatim as data: Copyright The KubeVirt Authors, Apache-2.0. " +
    'Generated by scripts/refresh-kubevirt-crds.mjs; do not edit. Every version of a CRD has its openAPIV3Schema.',
  kubevirtRelease: version,
  kubevirtCommit: kubevirtModule.Origin?.Hash ?? '',
  sources: [
    `kubevirt.io/kubevirt@${version} pkg/virt-operator/resource/generate/components/crds.go`,
    `kubevirt.io/kubevirt@${version} pkg/virt-operator/resource/generate/components/validations_generated.go`,
    `kubevirt.io/api@${version} core/v1/register.go`,
  ],
  crds: kinds.map((entry) => readCrd(entry, context)),
};
writeFileSync(output, `${JSON.stringify(data, null, 2)}\n`);
console.log(`refresh-kubevirt-crds: wrote KubeVirt ${version}'s ${kinds.length} CRDs to ${output}`);
