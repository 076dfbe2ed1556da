import type { DesktopKind, MemberRef } from './desktop-backend.js';
import { VdiError } from './errors.js';
import { formatDesktopId } from './ids.js';

const objectNouns: Record<DesktopKind, string> = { vm: 'VM', ct: 'Pod' };
const desktopNouns: Record<DesktopKind, string> = { vm: 'VM', ct: 'container' };

/** What a call on a member that does not exist tells the caller, in the words of the member's kind. */
export function memberNotFoundReason(kind: DesktopKind, namespace: string, member: string): string {
  return `There is no ${objectNouns[kind]} "${member}" in namespace "${namespace}"; check the name and the namespace.`;
}

/**
 * A name whose object exists but is no member of a pool of `kind`: no desktop, so not found, as a member that does
 * not exist is; `details.memberOf` is `null`.
 *
 * @param missing what the object lacks to be a member, such as its pool label
 */
export function notPoolMember(
  kind: DesktopKind,
  { namespace, member }: MemberRef,
  missing: string,
): VdiError {
  const desktopId = formatDesktopId({ kind, namespace, member });
  const pools = kind === 'vm' ? 'any pool' : 'any container pool';
  return new VdiError(
    'MEMBER_NOT_FOUND',
    `${objectNouns[kind]} "${namespace}/${member}" is not a member of ${pools} (it has no ${missing}), so there is no desktop ${desktopId}; list the pools for their members.`,
    { details: { namespace, member, desktopId, memberOf: null } },
  );
}

/**
 * A member named by the desktop ID of another kind: its claim Lease records `memberOf`. Not found under `kind`;
 * `details.memberOf` says the kind it is a member of.
 */
export function memberOfOtherKind(
  kind: DesktopKind,
  { namespace, member }: MemberRef,
  memberOf: DesktopKind,
): VdiError {
  const desktopId = formatDesktopId({ kind, namespace, member });
  const itsId = formatDesktopId({ kind: memberOf, namespace, member });
  return new VdiError(
    'MEMBER_NOT_FOUND',
    `There is no ${desktopNouns[kind]} desktop ${desktopId}: ${member} is a member of a ${desktopNouns[memberOf]} pool; use ${itsId} instead.`,
    { details: { namespace, member, desktopId, memberOf } },
  );
}
