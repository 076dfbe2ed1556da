// Prints the folders of src/ (and the files of src/ itself) by floor, read from their imports: each stands above
// everything it imports, floor 1 imports nothing of src/. A loop between folders has no floor and is named instead.
// Usage: node scripts/layers.mjs [FOLDER/ ...]   (with folders: also what each imports)
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const src = resolve(import.meta.dirname, '../src');
const importPattern =
  /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)/g;
const placeOf = (file) => (file.includes('/') ? `${file.split('/')[0]}/` : file);

const imports = new Map();
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
  const file = relative(src, join(entry.parentPath, entry.name));
  const code = readFileSync(join(src, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
  const from = placeOf(file);
  if (!imports.has(from)) imports.set(from, new Set());
  for (const match of code.matchAll(importPattern)) {
    const specifier = match[1] ?? match[2] ?? '';
    if (!specifier.startsWith('.')) continue;
    const to = placeOf(relative(src, resolve(src, dirname(file), specifier.replace(/\.js$/, '.ts'))));
    if (to !== from) imports.get(from).add(to);
  }
}

// the loops between folders (Tarjan's strongly connected components): a loop stands on one floor as a whole
const componentOf = new Map();
const loops = [];
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
function connect(place) {
  index.set(place, counter);
  low.set(place, counter);
  counter += 1;
  stack.push(place);
  for (const to of imports.get(place) ?? []) {
    if (!index.has(to)) {
      connect(to);
      low.set(place, Math.min(low.get(place), low.get(to)));
    } else if (!componentOf.has(to)) low.set(place, Math.min(low.get(place), index.get(to)));
  }
  if (low.get(place) !== index.get(place)) return;
  const members = [];
  let member;
  do {
    member = stack.pop();
    members.push(member);
  } while (member !== place);
  const name = members.length === 1 ? place : `(loop: ${members.sort().join(' ')})`;
  if (members.length > 1) loops.push(name);
  for (const each of members) componentOf.set(each, name);
}
for (const place of [...imports.keys()].sort()) if (!index.has(place)) connect(place);

const floors = new Map();
function floorOf(component) {
  if (floors.has(component)) return floors.get(component);
  const below = [...componentOf]
    .filter(([, of]) => of === component)
    .flatMap(([place]) => [...(imports.get(place) ?? [])])
    .map((to) => componentOf.get(to))
    .filter((to) => to !== component);
  const floor = 1 + Math.max(0, ...below.map(floorOf));
  floors.set(component, floor);
  return floor;
}
for (const component of new Set(componentOf.values())) floorOf(component);

const byFloor = new Map();
for (const [place, floor] of floors) byFloor.set(floor, [...(byFloor.get(floor) ?? []), place]);
for (const floor of [...byFloor.keys()].sort((a, b) => b - a)) {
  console.log(`floor ${String(floor).padStart(2)}  ${byFloor.get(floor).sort().join('  ')}`);
}
for (const place of process.argv.slice(2)) {
  console.log(`${place} imports ${[...(imports.get(place) ?? [])].sort().join('  ') || 'nothing of src/'}`);
}
if (loops.length > 0) process.exitCode = 1;
