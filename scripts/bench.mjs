// `npm run bench`: the claim path, warm spares, a logon storm, broker replicas, console input and the console relays; `npm run bench -- --scale`: the
// scale segment alone (bench/scale.bench.ts), which makes 30,000 VMs and loads a two-core machine for minutes.
// Every other argument goes to vitest.
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const files = args.includes('--scale')
  ? ['bench/scale.bench.ts']
  : [
      'bench/claim-path.bench.ts',
      'bench/warm-spares.bench.ts',
      'bench/logon-storm.bench.ts',
      'bench/replicas.bench.ts',
      'bench/console-input.bench.ts',
      'bench/console-relay.bench.ts',
    ];
const passed = args.filter((arg) => arg !== '--scale');
const run = spawnSync('npx', ['vitest', 'run', '-c', 'bench/vitest.config.ts', ...files, ...passed], {
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
