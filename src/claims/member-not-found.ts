import type { DesktopKind } from '../desktop-backend.js';

const objectNouns: Record<DesktopKind, string> = { vm: 'VM', ct: 'Pod' };

/** What a call on a member that does not exist tells the caller, in the words of the member's kind. */
export function memberNotFoundReason(kind: DesktopKind, namespace: string, member: string): string {
  return `There is no ${objectNouns[kind]} "${member}" in namespace "${namespace}"; check the name and the namespace.`;
}
