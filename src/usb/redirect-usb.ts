import { readUsableDesktop } from '../connect-planner/connect.js';
import { backendFor, type VdiContext } from '../context.js';
import { defaultDesktopKind, type MemberRef } from '../desktop-backend.js';
import { isVdiError, VdiError } from '../errors.js';
import { commandNotFoundError } from '../launch/install-hints.js';
import { findExecutable, type OutputStream, type ProcessExit, runProcess } from '../launch/run-process.js';
import { parseUsbDeviceId } from './device-id.js';
import { type UsbSecurityNotice, usbSecurityNotice } from './security-notice.js';

/** Options of {@link redirectUsb}. @category usb */
export interface RedirectUsbOptions {
  /** The member (VM) to redirect the device to. */
  member: string;
  /** `vvvv:pppp` (vendor:product, hex) or `bus-device` (decimal), as {@link listUsbDevices} shows them. */
  device: string;
  /** The caller's identity; only the desktop's holder (or an admin) may redirect to it. */
  identity: string;
  /** Default: the context's default namespace. */
  namespace?: string;
  /** An admin may redirect to any claimed desktop. */
  asAdmin?: boolean;
  /**
   * The caller's groups, as a front end that serves users passes them: a holder the desktop's pool no longer lets in
   * is then refused (`NOT_ENTITLED`). Left out, the call is an operator's own and is not checked.
   */
  groups?: readonly string[];
  /** Ends the redirection: virtctl gets SIGINT, then SIGTERM if it does not end within a few seconds. */
  signal?: AbortSignal;
  /**
   * Receives virtctl's output line by line, and, when there is no `confirm`, the security notice first
   * (stream `notice`).
   */
  onOutput?: (line: string, stream: OutputStream | 'notice') => void;
  /** Shown the security notice before the device is attached; resolve `false` to stop without attaching. */
  confirm?: (notice: UsbSecurityNotice) => boolean | Promise<boolean>;
}

/**
 * How a redirection ended: `declined` when `confirm` said no (nothing was started), `ended` when virtctl ended,
 * with its exit code.
 *
 * @category usb
 */
export type RedirectUsbResult =
  | {
      /** `confirm` said no; nothing was started. */
      outcome: 'declined';
      /** `vm/<namespace>/<member>`. */
      desktopId: string;
      /** The device ID, normalised. */
      device: string;
      /** The notice that was shown. */
      notice: UsbSecurityNotice;
    }
  | ({
      /** virtctl ran and has ended. */
      outcome: 'ended';
      /** `vm/<namespace>/<member>`. */
      desktopId: string;
      /** The device ID, normalised. */
      device: string;
      /** The notice that was shown. */
      notice: UsbSecurityNotice;
      /** The command that ran. */
      argv: string[];
    } & ProcessExit);

/**
 * USB redirection is a VM feature, and `redirectUsb` names no kind: a name that is no VM but a member of another
 * kind gets that kind's own answer (a container has no USB controller), not a hint to name its kind.
 */
async function refuseOtherKinds(ctx: VdiContext, ref: MemberRef, error: unknown): Promise<never> {
  if (!isVdiError(error, 'MEMBER_NOT_FOUND', 'UNSUPPORTED_BACKEND')) throw error;
  const vms = backendFor(ctx, defaultDesktopKind);
  for (const backend of Object.values(ctx.backends)) {
    if (backend === vms) continue;
    const support = await backend.checkUsbSupport(ref).catch((missing: unknown) => {
      if (isVdiError(missing, 'MEMBER_NOT_FOUND')) return undefined;
      throw missing;
    });
    if (support?.kind === 'unsupported') {
      throw new VdiError('UNSUPPORTED_BACKEND', support.reason, { details: support.details });
    }
  }
  throw error;
}

/**
 * Redirects a USB device of this machine to a running KubeVirt desktop the caller holds, through
 * `virtctl usbredir <device> <vmi> -n <namespace>`, until the signal aborts it, this process gets SIGINT, or
 * virtctl ends. Everything is checked before anything starts; the security notice is shown (or passed to
 * `confirm`) before the device is attached. virtctl finds the cluster through its own kubeconfig lookup
 * (`KUBECONFIG`, then `~/.kube/config`).
 *
 * @example
 * ```ts
 * const controller = new AbortController(); // controller.abort() detaches the device
 * const result = await redirectUsb(ctx, {
 *   member: 'devpool-1', device: '1050:0407', identity: 'alice', signal: controller.signal,
 *   onOutput: (line) => console.log(line),
 * });
 * if (result.outcome === 'ended') process.exitCode = result.exitCode;
 * ```
 * @throws {@link VdiError} `INVALID_INPUT` for a malformed device ID; `CLAIM_ENDED`, `CLAIM_EXPIRED` or
 *   `NOT_HOLDER` when the caller does not hold the desktop; `NOT_ENTITLED`, with `groups`, when its pool no longer
 *   lets its holder in; `MEMBER_NOT_FOUND`; `UNSUPPORTED_BACKEND` for a container member, claimed or not (USB
 *   redirection is a VM feature), or a VM that lacks `devices.clientPassthrough` (the message says how to add it);
 *   `DESKTOP_STOPPED` when it does not run; `COMMAND_NOT_FOUND` when `virtctl` or `usbredirect` is not on the
 *   PATH (the message says how to install it).
 * @category usb
 */
export async function redirectUsb(ctx: VdiContext, options: RedirectUsbOptions): Promise<RedirectUsbResult> {
  const device = parseUsbDeviceId(options.device).text;
  const desktop = await readUsableDesktop(ctx, { ...options, action: 'redirect USB devices to' }).catch(
    (error: unknown) =>
      refuseOtherKinds(
        ctx,
        { namespace: options.namespace ?? ctx.defaultNamespace, member: options.member },
        error,
      ),
  );
  const { desktopId, namespace, backend } = desktop;
  const support = await backend.checkUsbSupport({ namespace, member: options.member });
  if (support.kind === 'unsupported') {
    throw new VdiError('UNSUPPORTED_BACKEND', support.reason, { details: support.details });
  }
  if ((await findExecutable('virtctl')) === undefined)
    throw commandNotFoundError('virtctl', 'to redirect USB devices');
  // virtctl starts usbredirect by name to read the local device
  if ((await findExecutable('usbredirect')) === undefined) {
    throw commandNotFoundError('usbredirect', 'by virtctl to redirect USB devices');
  }

  const notice = usbSecurityNotice();
  if (options.confirm) {
    if (!(await options.confirm(notice))) return { outcome: 'declined', desktopId, device, notice };
  } else {
    for (const line of [notice.heading, ...notice.points.map((point) => `- ${point}`)])
      options.onOutput?.(line, 'notice');
  }

  // a VM's instance has the VM's name
  const argv: [string, ...string[]] = ['virtctl', 'usbredir', device, options.member, '-n', namespace];
  const exit = await runProcess(argv, {
    stdio: 'pipe',
    neededFor: 'to redirect USB devices',
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
  });
  return { outcome: 'ended', desktopId, device, notice, argv, ...exit };
}
