// Stands in for usbredir's `usbredirect`, which needs a real USB device: virtctl starts it as
// `usbredirect --device <id> --to <host:port>`, and it plays the device's end of the usbredir stream on that port.
// It sends a hello and three bulk packets, checks that the guest greets with its own hello and echoes each packet,
// writes what happened as JSON to $USBREDIRECT_REPORT, and stays attached until it is stopped, as the real one does.
// Node runs this file as it is (types are stripped), so it imports nothing of the project.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';

const headerBytes = 12;
const bulkPacket = 101;

interface Report {
  device: string;
  /** Every packet sent, hex, in order: the hello first. */
  sent: string[];
  /** The guest's hello version. */
  guestVersion?: string;
  /** The packets that came back after the guest's hello, hex, in order. */
  echoed: string[];
  error?: string;
}

function packet(type: number, id: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(headerBytes);
  header.writeUInt32LE(type, 0);
  header.writeUInt32LE(payload.length, 4);
  header.writeUInt32LE(id, 8);
  return Buffer.concat([header, payload]);
}

const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
};
const device = flag('--device');
const to = flag('--to');
const reportPath = process.env.USBREDIRECT_REPORT;
if (!device || !to || !reportPath) {
  process.stderr.write('usage: usbredirect --device <id> --to <host:port>, with USBREDIRECT_REPORT set\n');
  process.exit(2);
}

const hello = Buffer.alloc(68);
hello.write(`usbredirect stand-in ${device}`, 'latin1');
// payloads differ per packet and per device, so a packet that arrives twice or out of order shows
const packets = [
  packet(0, 0, hello),
  ...[1, 2, 3].map((id) =>
    packet(
      bulkPacket,
      id,
      Buffer.from(createHash('sha512').update(`${device} ${id}`).digest().toString('hex').repeat(id)),
    ),
  ),
];
const report: Report = { device, sent: packets.map((each) => each.toString('hex')), echoed: [] };
const finish = (error?: string) => {
  if (error) report.error = error;
  writeFileSync(reportPath, JSON.stringify(report));
  if (error) process.exit(1);
};

const [host = '', port = ''] = to.split(/:(?=\d+$)/);
const socket = connect(Number(port), host, () => {
  // in pieces smaller than a packet, as a device's transfers reach the socket
  const stream = Buffer.concat(packets);
  for (let at = 0; at < stream.length; at += 100) socket.write(stream.subarray(at, at + 100));
});
let pending = Buffer.alloc(0);
socket.on('data', (data: Buffer) => {
  pending = Buffer.concat([pending, data]);
  while (pending.length >= headerBytes && pending.length >= headerBytes + pending.readUInt32LE(4)) {
    const whole = pending.subarray(0, headerBytes + pending.readUInt32LE(4));
    pending = pending.subarray(whole.length);
    if (report.guestVersion === undefined) {
      if (whole.readUInt32LE(0) !== 0)
        return finish(`the guest's first packet has type ${whole.readUInt32LE(0)}`);
      const version = whole.subarray(headerBytes, headerBytes + 64);
      report.guestVersion = version.subarray(0, version.indexOf(0)).toString('latin1');
      continue;
    }
    report.echoed.push(whole.toString('hex'));
    if (report.echoed.length === packets.length - 1) finish();
  }
});
socket.on('error', (error) => finish(`the connection to ${to} failed: ${error.message}`));
socket.on('close', () => {
  if (report.echoed.length < packets.length - 1) finish(`the connection to ${to} closed early`);
});
