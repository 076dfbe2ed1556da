import { z } from 'zod';
import { canOpenConsole } from '../claims/access.js';
import { readDesktopAs } from '../claims/read-held-member.js';
import { backendFor, type VdiContext } from '../context.js';
import { desktopContainer } from '../ct/ct-keys.js';
import { requireCtPool } from '../ct/ct-pool-store.js';
import { isVdiError, VdiError } from '../errors.js';
import { parseDesktopId } from '../ids.js';
import type { TerminalStream } from '../kube/pod-exec.js';
import { identitySchema, parseOptions } from '../validate.js';

/** Options of {@link openTerminal}. @category ct-pools */
export interface OpenTerminalOptions {
  /** The caller's exact identity: the holder, or an administrator with `asAdmin`. */
  identity: string;
  /** Open any holder's desktop. */
  asAdmin?: boolean;
  /** The terminal's first size. @defaultValue 80 × 24 */
  columns?: number;
  rows?: number;
  /**
   * Run the shell on a terminal. `false` runs it on pipes, for input from a script or a file: ending the stream's
   * input is then the shell's end of input, and it exits once it has run what it read, as `kubectl exec -i`
   * without `-t`. On a terminal the end of input is the container runtime's to interpret. @defaultValue true
   */
  tty?: boolean;
}

const optionsSchema = z.object({
  identity: identitySchema,
  asAdmin: z.boolean().optional(),
  columns: z.number().int().min(1).max(1000).optional(),
  rows: z.number().int().min(1).max(1000).optional(),
  tty: z.boolean().optional(),
});

/**
 * Opens a shell in a container desktop: the pool spec's `shell` in the member's container, through the
 * apiserver's `pods/exec` with a TTY (unless `tty: false`). Only the holder of a live claim, or an administrator,
 * may open it.
 *
 * @example
 * ```ts
 * const terminal = await openTerminal(vdi.context, 'ct/corral-vms/devbox-1', { identity: 'alice@example.com' });
 * terminal.on('data', (chunk) => process.stdout.write(chunk));
 * terminal.write('echo $HOSTNAME\n');
 * terminal.resize({ columns: 120, rows: 40 });
 * console.log('exit', await terminal.exitCode);
 * ```
 * @throws {@link VdiError} `INVALID_INPUT`; `UNSUPPORTED_BACKEND` for a VM desktop (open its VNC or serial
 *   console instead); `MEMBER_NOT_FOUND`; `NOT_HOLDER`, `CLAIM_ENDED`, `CLAIM_EXPIRED`; `DESKTOP_STOPPED` while
 *   its Pod is not Ready; `FORBIDDEN` when the apiserver refuses the caller `pods/exec`.
 * @category ct-pools
 */
export async function openTerminal(
  ctx: VdiContext,
  desktopId: string,
  options: OpenTerminalOptions,
): Promise<TerminalStream> {
  const { identity, asAdmin, columns, rows, tty } = parseOptions(optionsSchema, options, 'openTerminal');
  const { kind, namespace, member } = parseDesktopId(desktopId);
  if (kind !== 'ct') {
    throw new VdiError(
      'UNSUPPORTED_BACKEND',
      `${desktopId} is a VM desktop, which has no container terminal; connect to it for its VNC or serial console.`,
      { details: { desktopId } },
    );
  }
  const { view } = await readDesktopAs(ctx, {
    kind,
    namespace,
    member,
    identity,
    isAdmin: asAdmin ?? false,
    decide: (request) => canOpenConsole({ ...request, doing: 'open a terminal of' }),
  });
  // refuses a Pod that is not Ready, with what to do
  await backendFor(ctx, kind).gatherConnectFacts({ namespace, member });
  const { spec } = await requireCtPool(ctx, namespace, view.pool);
  try {
    return await ctx.cluster.execInPod({
      namespace,
      pod: member,
      container: desktopContainer,
      command: [spec.shell],
      ...(tty === undefined ? {} : { tty }),
      columns: columns ?? 80,
      rows: rows ?? 24,
    });
  } catch (error) {
    if (!isVdiError(error, 'FORBIDDEN')) throw error;
    throw new VdiError(
      'FORBIDDEN',
      `Could not open a terminal in Pod ${namespace}/${member}: ${refusalOf(error, namespace)}`,
      {
        details: { namespace, pod: member, status: 403 },
        cause: error,
      },
    );
  }
}

// The get check names its verb; the create check that Kubernetes 1.35 added to the upgrade gives no reason.
function refusalOf(error: VdiError, namespace: string): string {
  if (/cannot \w+ resource/.test(error.message)) return error.message;
  return `the caller may get but cannot create resource "pods/exec" in namespace "${namespace}", which Kubernetes 1.35 and later also ask of a terminal's websocket. Grant the caller create on pods/exec (see the permissions in the docs).`;
}
