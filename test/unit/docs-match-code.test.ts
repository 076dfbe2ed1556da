import { readdirSync, readFileSync } from 'node:fs';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { routes } from '../../src/broker/routes.js';
import {
  type CommandSpec,
  clusterOptions,
  commonOptions,
  type OptionSpec,
} from '../../src/cli/command-spec.js';
import { cliCommands } from '../../src/cli/run-cli.js';

const pages = [
  'README.md',
  ...readdirSync('docs')
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const textOf = new Map(pages.map((page) => [page, readFileSync(page, 'utf8')]));

/** The code of a page: each line of its fenced blocks (a line ending in `\` joined to the next), and each inline span. */
function codeOf(text: string): string[] {
  const code: string[] = [];
  const prose = text.replace(/^```[^\n]*\n([\s\S]*?)^```/gm, (_, block: string) => {
    code.push(...block.replace(/\\\n\s*/g, ' ').split('\n'));
    return '';
  });
  for (const [, span] of prose.matchAll(/`([^`\n]+)`/g)) code.push(span ?? '');
  return code;
}

const groupWords = new Set(cliCommands.map((command) => command.words[0]));
/** A line with the `|` between choices of a synopsis (`[-n NS | -A]`) made a space, so only a shell's pipe ends a command. */
function withoutChoices(line: string): string {
  let depth = 0;
  return [...line]
    .map((char) => {
      if (char === '[') depth++;
      if (char === ']') depth--;
      return char === '|' && depth > 0 ? ' ' : char;
    })
    .join('');
}

const optionsOf = (command: CommandSpec): Record<string, OptionSpec> => ({
  ...commonOptions,
  ...command.options,
});

/** The command a line's words name (the longest match), and the tokens after them. */
function commandOf(tokens: string[]): { command: CommandSpec; rest: string[] } | undefined {
  const [first, second] = tokens;
  const command =
    cliCommands.find(
      (candidate) => candidate.words.length === 2 && candidate.words.join(' ') === `${first} ${second}`,
    ) ?? cliCommands.find((candidate) => candidate.words.length === 1 && candidate.words[0] === first);
  return command && { command, rest: tokens.slice(command.words.length) };
}

/** What is wrong with one command line of the docs (the tokens after `corral-vdi`), in words; none when it is right. */
function problemsOf(tokens: string[], required: boolean): string[] {
  const first = tokens[0];
  // a placeholder such as `corral-vdi <command>` or `corral-vdi …` names no command
  if (first === undefined || !/^[a-z]/.test(first)) {
    const topLevel = new Set(['--help', '-h', '--version', '-V']);
    return tokens
      .filter((token) => /^--?[A-Za-z]/.test(token) && !topLevel.has(token))
      .map((flag) => `unknown top-level flag ${flag}`);
  }
  const found = commandOf(tokens);
  // a group alone (`corral-vdi dev-cluster`) names its commands, as its help does
  const group = groupWords.has(first) && !/^[a-z]/.test(tokens[1] ?? '');
  if (!found) return required && !group ? [`no command "${tokens.slice(0, 2).join(' ')}"`] : [];
  const options = optionsOf(found.command);
  const shorts = new Set(Object.values(options).flatMap((option) => (option.short ? [option.short] : [])));
  const problems: string[] = [];
  for (const token of found.rest) {
    if (token === '--') break;
    const long = /^--([a-z][a-z0-9-]*)/.exec(token)?.[1];
    if (long !== undefined && !(long in options))
      problems.push(`"${found.command.words.join(' ')}" has no flag --${long}`);
    const short = /^-([A-Za-z])$/.exec(token)?.[1];
    if (short !== undefined && !shorts.has(short))
      problems.push(`"${found.command.words.join(' ')}" has no flag -${short}`);
  }
  return problems;
}

// the simulated USB guest's version string
const notCommands = new Set(['corral-vdi simulated usbredir guest']);
// Pages about other programs' flags: the test tools, node and the apiserver the local control plane runs.
const otherProgramsPages = new Set(['docs/testing.md', 'docs/benchmarks.md', 'docs/simulator.md']);
const allFlags = new Set(cliCommands.flatMap((command) => Object.keys(optionsOf(command))));

describe('the CLI the docs name', () => {
  it('has every command and flag named on a corral-vdi line of README.md and docs/*.md', () => {
    const problems: string[] = [];
    for (const [page, text] of textOf) {
      for (const line of codeOf(text).map(withoutChoices)) {
        // after `helm install` or `helm uninstall`, corral-vdi is a release name
        for (const [, after] of line.matchAll(
          /(?:^|[\s$(])(?<!helm (?:un)?install )corral-vdi ([^|;&#`)]*)/g,
        )) {
          if (notCommands.has(`corral-vdi ${after}`)) continue;
          const tokens = (after ?? '').trim().split(/\s+/).filter(Boolean);
          problems.push(
            ...problemsOf(tokens, true).map(
              (problem) => `${page}: \`corral-vdi ${after?.trim()}\`: ${problem}`,
            ),
          );
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('has every flag a code span names, alone or after its command words', () => {
    const problems: string[] = [];
    for (const [page, text] of textOf) {
      if (otherProgramsPages.has(page)) continue;
      for (const [, span = ''] of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/`([^`\n]+)`/g)) {
        const tokens = span.trim().split(/\s+/);
        const first = tokens[0] ?? '';
        if (groupWords.has(first)) {
          problems.push(...problemsOf(tokens, false).map((problem) => `${page}: \`${span}\`: ${problem}`));
        } else if (/^--[a-z]/.test(first)) {
          const name = /^--([a-z][a-z0-9-]*)/.exec(first)?.[1] ?? '';
          if (!allFlags.has(name)) problems.push(`${page}: \`${span}\`: no command has the flag --${name}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('is documented in docs/cli.md: every command under a heading of its own words, with each of its flags', () => {
    const cliPage = textOf.get('docs/cli.md') ?? '';
    const sections = cliPage.split(/^### /m).slice(1);
    const problems: string[] = [];
    const conventions = /^## Conventions\n[\s\S]*?^## /m.exec(cliPage)?.[0] ?? '';
    for (const flag of Object.keys(clusterOptions)) {
      if (!conventions.includes(`--${flag}`)) problems.push(`Conventions do not name --${flag}`);
    }
    for (const command of cliCommands.filter((candidate) => !candidate.hidden)) {
      const [group, word] = command.words;
      const section = sections.find((candidate) => {
        const [heading = ''] = candidate.split('\n');
        const [headGroup, ...words] = heading.replace(/,/g, '').split(/\s+/);
        return headGroup === group && (word === undefined ? words.length === 0 : words.includes(word));
      });
      if (section === undefined) {
        problems.push(`no heading for "${command.words.join(' ')}"`);
        continue;
      }
      // the cluster flags every such command takes are under Conventions, once
      for (const [flag, option] of Object.entries(command.options)) {
        if (flag in clusterOptions) continue;
        const named = new RegExp(`--${flag}\\b${option.short ? `|\\W-${option.short}\\b` : ''}`).test(
          section,
        );
        if (!named) problems.push(`"${command.words.join(' ')}" does not name --${flag}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

const routeTable = Object.values(routes).map((route) => ({
  method: route.method,
  segments: route.path.split('/'),
}));
// one segment of a path; `\|` is a pipe inside a table cell, as in {vnc\|serial}
const pathPattern =
  /\b(GET|POST|PUT|PATCH|DELETE) (\/(?:api\/|healthz|readyz|metrics)(?:\\\||[^\s`|),;?])*)/g;

describe('the broker routes the docs name', () => {
  it('are in the route table with the method the docs give', () => {
    const problems: string[] = [];
    for (const [page, text] of textOf) {
      for (const [, method, path = ''] of text.matchAll(pathPattern)) {
        // the Kubernetes core API is not the broker's
        if (path.startsWith('/api/v1/')) continue;
        const segments = path.replace(/\.$/, '').split('/');
        const matches = routeTable.some(
          (route) =>
            route.method === method &&
            route.segments.length === segments.length &&
            route.segments.every(
              (segment, index) => segment === segments[index] || /^\{\w+\}$/.test(segment),
            ),
        );
        if (!matches) problems.push(`${page}: ${method} ${path}`);
      }
    }
    expect(problems).toEqual([]);
  });
});

interface RbacRule {
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  verbs?: string[];
}
interface RbacRole {
  kind: string;
  metadata: { name: string };
  rules: RbacRule[];
}

const isRole = (object: { kind?: string } | null): object is RbacRole =>
  object?.kind === 'Role' || object?.kind === 'ClusterRole';
const keyOf = (role: RbacRole) => `${role.kind} ${role.metadata.name}`;

function rolesIn(yaml: string): RbacRole[] {
  return (loadAllYaml(yaml) as Array<{ kind?: string } | null>).filter(isRole);
}

/** The Roles and ClusterRoles of a page's yaml blocks, by kind and name. */
function rolesOf(text: string): Map<string, RbacRole> {
  const yaml = [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map(([, block]) => block ?? '');
  return new Map(yaml.flatMap(rolesIn).map((role) => [keyOf(role), role]));
}

const deployRoles = new Map(
  rolesIn(readFileSync('deploy/rbac.yaml', 'utf8')).map((role) => [keyOf(role), role]),
);
// docs/claims.md's are the SDK's own, which test/unit/permissions.test.ts checks against the code's requests
const sdkRoles = rolesOf(textOf.get('docs/claims.md') ?? '');
// a Role the docs show for another program: virtctl's USB redirection, which the SDK never opens
const otherProgramsRoles = new Set(['Role corral-vdi-usbredir']);

describe('the Roles and ClusterRoles the docs show', () => {
  it("are deploy/rbac.yaml's, the SDK's of docs/claims.md, or another program's, rule for rule", () => {
    const problems: string[] = [];
    for (const [page, text] of textOf) {
      for (const [key, role] of rolesOf(text)) {
        const source = deployRoles.get(key) ?? (page === 'docs/claims.md' ? undefined : sdkRoles.get(key));
        if (source) expect(role.rules, `${page}: ${key}`).toEqual(source.rules);
        else if (page !== 'docs/claims.md' && !otherProgramsRoles.has(key))
          problems.push(`${page}: ${key} is nobody's`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("include, on the broker's page, every Role and ClusterRole of deploy/rbac.yaml", () => {
    const text = textOf.get('docs/broker.md') ?? '';
    const start = text.indexOf('### Permissions in the cluster');
    const section = text.slice(start, text.indexOf('\n## ', start));
    expect([...rolesOf(section).keys()].sort()).toEqual([...deployRoles.keys()].sort());
  });
});
