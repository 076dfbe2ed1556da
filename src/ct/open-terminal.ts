import { z } from 'zod';
import { canOpenConsole } from '../access.js';
import { readDesktopAs } from '../claims/read-held-member.js';
import { backendFor, type VdiContext } from '../context.js';
import { VdiError } from '../errors.js';
import { parseDesktopId } from '../ids.js';
import type { TerminalStream } from '../kube/pod-exec.js';
import { identitySchema, parseOptions } from '../validate.js';
import { desktopContainer } from './ct-keys.js';
import { requireCtPool } from './ct-pool-store.js';

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
    if (!isRefusedUpgrade(error)) throw error;
    throw new VdiError(
      'FORBIDDEN',
      `Could not open a terminal in Pod ${namespace}/${member}: the apiserver refused its websocket (403): the caller cannot get resource "pods/exec" in namespace "${namespace}" (newer apiservers also ask to create it). Grant the caller get and create on pods/exec (see the permissions in the docs).`,
      { details: { namespace, pod: member, status: 403 }, cause: error },
    );
  }
}

// the websocket client keeps only the status of a refused upgrade, not the apiserver's words
function isRefusedUpgrade(error: unknown): boolean {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    const { message } = current as { message?: unknown };
    if (typeof message === 'string' && message.includes('Unexpected server response: 403')) return true;
  }
  return false;
}
