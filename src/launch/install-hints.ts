import { VdiError } from '../errors.js';

const installHints: Readonly<Record<string, string>> = {
  xfreerdp:
    'Install FreeRDP: `apt install freerdp2-x11` on Debian or Ubuntu, `dnf install freerdp` on Fedora.',
  virtctl:
    'Install virtctl in the version of your cluster’s KubeVirt from the KubeVirt release page ' +
    '(https://github.com/kubevirt/kubevirt/releases), or run `kubectl krew install virt` and put a `virtctl` ' +
    'link to `kubectl-virt` on your PATH.',
  usbredirect:
    'Install usbredirect, which virtctl starts to read the device: `apt install usbredirect` on Debian or ' +
    'Ubuntu, or your distribution’s usbredir tools package.',
  kubectl: 'Install kubectl: https://kubernetes.io/docs/tasks/tools/',
};

/**
 * How to install a program the SDK starts, in one sentence, or a generic line for a program it does not know.
 *
 * @example
 * ```ts
 * installHintFor('xfreerdp'); // 'Install FreeRDP: `apt install freerdp2-x11` on Debian or Ubuntu, …'
 * ```
 * @category connect
 */
export function installHintFor(program: string): string {
  return installHints[program] ?? `Install ${program} and make sure it is on your PATH.`;
}

/**
 * The error for a program that is not on the PATH: `COMMAND_NOT_FOUND`, with the install hint in the message
 * and `details.program` / `details.hint` for programs.
 *
 * @category connect
 */
export function commandNotFoundError(program: string, neededFor: string): VdiError {
  const hint = installHintFor(program);
  return new VdiError(
    'COMMAND_NOT_FOUND',
    `${program} is not on your PATH; it is needed ${neededFor}. ${hint}`,
    {
      details: { program, hint },
    },
  );
}
