import type { ConnectAnswerBody } from '../broker/schemas.js';
import type { ConsoleProtocol } from '../client/vdi-client.js';

/** What the page opens for a connect answer, and what it passed over with the reasons. */
export interface ConsoleChoice {
  /** The console the page opens, or `undefined` when the plan offers none a browser can open. */
  protocol: ConsoleProtocol | undefined;
  /** Every console not opened, with why: the plan's skips, then offers a browser cannot open. */
  skipped: Array<{ protocol: string; reason: string }>;
}

const browserProtocols: readonly string[] = ['vnc', 'serial', 'terminal'];

/**
 * Picks the console a browser opens from the broker's connect plan: the plan's target when a browser can open
 * it, else the first fallback that it can. RDP needs a desktop client, so it is passed over with that reason.
 */
export function chooseConsole(answer: ConnectAnswerBody): ConsoleChoice {
  const offers = [answer.target, ...answer.fallbacks];
  const chosen = offers.find((offer) => browserProtocols.includes(offer.protocol));
  const passedOver = offers
    .filter((offer) => offer !== chosen && offer.protocol === 'rdp')
    .map((offer) => ({
      protocol: offer.protocol,
      reason: 'RDP needs a desktop client; run corral-vdi connect --open on your computer to use it.',
    }));
  return {
    protocol: chosen?.protocol as ConsoleProtocol | undefined,
    skipped: [...answer.skipped, ...passedOver],
  };
}
