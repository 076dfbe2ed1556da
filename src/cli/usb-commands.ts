import { listUsbDevices } from '../usb/list-usb-devices.js';
import { redirectUsb } from '../usb/redirect-usb.js';
import { type CommandSpec, clusterOptions, requiredFlag } from './command-spec.js';

const list: CommandSpec = {
  words: ['usb', 'list'],
  summary: 'List the USB devices of this machine that can be redirected to a desktop.',
  args: [],
  options: {},
  notes: ['It reads /sys/bus/usb/devices, so it needs Linux; elsewhere it says so and exits 1.'],
  examples: ['$ corral-vdi usb list'],
  async run(input) {
    const devices = await listUsbDevices();
    const { terminal } = input;
    if (terminal.json) {
      terminal.printJson({ devices });
      return 0;
    }
    if (devices.length === 0) {
      terminal.print('no USB devices are attached to this machine');
      return 0;
    }
    terminal.print(terminal.paint.bold(`${'ID'.padEnd(11)}${'BUS-DEV'.padEnd(9)}DEVICE`));
    for (const device of devices) {
      const name = [device.manufacturer, device.product].filter(Boolean).join(' ') || '(unnamed)';
      terminal.print(
        `${device.id.padEnd(11)}${device.busDevice.padEnd(9)}${name}${device.hub ? ' (hub)' : ''}`,
      );
    }
    return 0;
  },
};

const redir: CommandSpec = {
  words: ['usb', 'redir'],
  summary: "Redirect a USB device of this machine to a user's running desktop, until Ctrl-C.",
  args: ['member'],
  options: {
    ...clusterOptions,
    device: {
      type: 'string',
      value: 'VID:PID',
      help: 'The device: vendor:product (hex) or bus-device, as usb list shows it.',
    },
    user: {
      type: 'string',
      value: 'LOGIN',
      help: 'The user who holds the desktop; the redirection is refused otherwise.',
    },
  },
  notes: [
    'Needs virtctl and usbredirect on this machine and a VM with devices.clientPassthrough. The security ' +
      "implications are printed before the device is attached. The exit code is virtctl's.",
  ],
  examples: ['$ corral-vdi usb redir devpool-1 --device 1050:0407 --user alice'],
  async run(input) {
    const device = requiredFlag(input, redir, 'device');
    const user = requiredFlag(input, redir, 'user');
    const session = await input.cluster();
    const { terminal } = input;
    const result = await redirectUsb(session.vdi.context, {
      member: input.args.member ?? '',
      device,
      identity: user,
      namespace: session.namespace,
      onOutput: (line, stream) =>
        stream === 'stdout' && !terminal.json ? terminal.print(line) : terminal.note(line),
    });
    if (terminal.json) terminal.printJson(result);
    return result.outcome === 'ended' ? result.exitCode : 0;
  },
};

/** `usb list` and `usb redir`. */
export const usbCommands: readonly CommandSpec[] = [list, redir];
