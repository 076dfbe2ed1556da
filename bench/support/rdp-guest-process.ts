// The console-relay bench's RDP guest in a process of its own, as a real guest never shares a process with its
// viewer: listens on the address given as the first argument, port 3389, writes one line once it does, and closes
// when its standard input ends.
import { startFakeRdpGuest } from '../../test/support/fake-rdp-guest.js';

const guest = await startFakeRdpGuest(process.argv[2] ?? '', 'stream');
process.stdout.write('listening\n');
process.stdin.resume();
process.stdin.on('end', () => {
  void guest.close().then(() => process.exit(0));
});
