import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const buildScript = fileURLToPath(new URL('../../scripts/build-virtctl.sh', import.meta.url));

/** The stand-in for usbredirect that virtctl starts (see the file for what it does). */
export const usbredirectStandIn = fileURLToPath(new URL('./usbredirect-stand-in.ts', import.meta.url));

/**
 * The path of KubeVirt's virtctl, from the binary cache; scripts/build-virtctl.sh builds it there first when it is
 * missing (minutes, once per machine) and answers at once when it is not.
 */
export function kubevirtVirtctl(): string {
  const dir = execFileSync('bash', [buildScript], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return join(dir.trim(), 'virtctl');
}
