import { compareNatural } from '../member-names.js';
import { type CommandInput, type CommandSpec, stringFlag } from './command-spec.js';
import { UsageError } from './usage-error.js';

/** Which members a listing shows: at most `limit` (all when `undefined`), those after `after` in natural order. */
export interface MemberPageRequest {
  limit: number | undefined;
  after: string | undefined;
}

/** One page of a pool's members, and where the next one starts. */
export interface MemberPage<T> {
  members: T[];
  /** Members of the pool, all pages together. */
  total: number;
  /** Members before this page. */
  skipped: number;
  /** The `--after` of the next page; `undefined` on the last one. */
  next: string | undefined;
}

/** The `--limit` and `--after` options of a listing that pages members. */
export const memberPageOptions = {
  limit: {
    type: 'string',
    value: 'N',
    help: 'Show at most N members of each pool (1 to 10000), and how to ask for the next ones.',
  },
  after: {
    type: 'string',
    value: 'MEMBER',
    help: 'Show the members after this one, in the order of the list (it need not exist any more).',
  },
} as const;

const maxLimit = 10_000;

/** @throws {@link UsageError} when `--limit` is not a whole number from 1 to 10000. */
export function memberPageRequest(input: CommandInput, command: CommandSpec): MemberPageRequest {
  const text = stringFlag(input, 'limit');
  if (text !== undefined && (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > maxLimit)) {
    throw new UsageError(`--limit takes a whole number from 1 to ${maxLimit}, not "${text}"`, command.words);
  }
  return { limit: text === undefined ? undefined : Number(text), after: stringFlag(input, 'after') };
}

/** Whether the command was asked for a page rather than every member. */
export function asksForPage(request: MemberPageRequest): boolean {
  return request.limit !== undefined || request.after !== undefined;
}

/** The page of `members` (in natural order of `nameOf`) that `request` asks for. */
export function pageOfMembers<T>(
  members: readonly T[],
  nameOf: (member: T) => string,
  request: MemberPageRequest,
): MemberPage<T> {
  const { after, limit } = request;
  // by order, not by position: a member removed since the last page does not shift the next one
  const start =
    after === undefined ? 0 : members.findIndex((member) => compareNatural(nameOf(member), after) > 0);
  const skipped = start === -1 ? members.length : start;
  const end = limit === undefined ? members.length : Math.min(members.length, skipped + limit);
  const shown = members.slice(skipped, end);
  const last = shown.at(-1);
  return {
    members: shown,
    total: members.length,
    skipped,
    next: end < members.length && last !== undefined ? nameOf(last) : undefined,
  };
}

/** The line under a page that is not the whole pool: which members it shows, and the next page's flag. */
export function memberPageLine(page: MemberPage<unknown>): string | undefined {
  if (page.members.length === page.total) return undefined;
  const range =
    page.members.length === 0
      ? `no members after ${page.skipped}`
      : `members ${page.skipped + 1}-${page.skipped + page.members.length}`;
  return `${range} of ${page.total}${page.next === undefined ? '' : `; next: --after ${page.next}`}`;
}
