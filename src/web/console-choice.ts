import type { ConnectAnswerBody } from '../broker/schemas.js';

/** A console the page opens: RDP in IronRDP, VNC in noVNC, a serial line or a terminal in xterm.js. */
export type PageConsole = ConnectAnswerBody['target']['protocol'];

/** One console of the connect plan. */
export type ConsoleOffer = ConnectAnswerBody['target'];

/** What the page opens for a connect answer, and what it passed over with the reasons. */
export interface ConsoleChoice {
  /** The console the page opens, or `undefined` when the plan offers none. */
  protocol: PageConsole | undefined;
  /** The plan's target, then its fallbacks: the first is opened, the next is offered when it fails. */
  offers: ConsoleOffer[];
  /** Every console the plan passed over, with why. */
  skipped: Array<{ protocol: string; reason: string }>;
}

/** Picks the console a browser opens from the broker's connect plan: its target, with the fallbacks behind it. */
export function chooseConsole(answer: ConnectAnswerBody): ConsoleChoice {
  const offers = [answer.target, ...answer.fallbacks];
  return { protocol: offers[0]?.protocol, offers, skipped: [...answer.skipped] };
}

/** The offer to open after `failed`, the next one in the plan of another protocol, if any. */
export function nextOffer(offers: readonly ConsoleOffer[], failed: PageConsole): ConsoleOffer | undefined {
  const from = offers.findIndex((offer) => offer.protocol === failed);
  return offers.slice(from + 1).find((offer) => offer.protocol !== failed);
}
