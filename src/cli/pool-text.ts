// How the pool commands write a pool, its members, a capacity plan and a status for a terminal.
import type { AdmissionPlan, CapacityRow } from '../capacity/admit-pool.js';
import { formatDuration } from '../parse-duration.js';
import type { PoolSettings, ReclaimAction } from '../pool-settings.js';
import type { PoolStatus } from '../pool-status/pool-status.js';
import type { MemberState, PoolMemberView, PoolView } from '../pools/pool-view.js';
import { type MemberPage, memberPageLine, pageOfMembers } from './member-page.js';
import { rolloutLine } from './rollout-flags.js';
import type { Terminal } from './terminal.js';

/** A pool's settings in words, for `pool list` and `pool set`. */
export function settingsText(pool: { reclaimAction: ReclaimAction; settings: PoolSettings }): string {
  const { reclaimWebhook, idleTimeoutMs, allowedGroups, allowedUsers, maxDesktopsPerUser } = pool.settings;
  const parts = [
    `reclaim: ${pool.reclaimAction}${reclaimWebhook ? ` → ${new URL(reclaimWebhook).origin}` : ''}`,
  ];
  if (idleTimeoutMs !== undefined)
    parts.push(`idle timeout: ${idleTimeoutMs === 0 ? 'off' : formatDuration(idleTimeoutMs)}`);
  if (allowedGroups?.length) parts.push(`groups: ${allowedGroups.join(' ')}`);
  if (allowedUsers?.length) parts.push(`users: ${allowedUsers.join(' ')}`);
  if (maxDesktopsPerUser) parts.push(`max desktops per user: ${maxDesktopsPerUser}`);
  return parts.join(', ');
}

/** A member in `pool list -o json`. */
export interface PoolMemberJson {
  name: string;
  id: string;
  status: MemberState['kind'];
  holder: string | null;
  since: string | null;
  expiresAt: string | null;
  power: string;
  ephemeral: boolean;
  source: string | null;
}

export function toMemberJson(member: PoolMemberView): PoolMemberJson {
  const { state } = member;
  const holder =
    state.kind === 'claimed' ? state.holder : state.kind === 'legacy-assigned' ? state.user : null;
  return {
    name: member.name,
    id: member.desktopId,
    status: state.kind,
    holder,
    since: state.kind === 'claimed' || state.kind === 'legacy-assigned' ? (state.since ?? null) : null,
    expiresAt: state.kind === 'claimed' ? (state.expiresAt ?? null) : null,
    power: member.power,
    ephemeral: member.ephemeral,
    source: member.source ?? null,
  };
}

function holderColumn(state: MemberState): string {
  switch (state.kind) {
    case 'free':
      return 'free';
    case 'claimed':
      return state.leaseMissing ? `${state.holder} (no Lease)` : state.holder;
    case 'legacy-assigned':
      return `${state.user} (v0.6.0)`;
    case 'taking':
      // not a claim yet: the claim waits for the last guest to go, then hands it out or gives it back
      return `nobody (${state.holder} taking)`;
    case 'deleting':
      return 'deleting';
  }
}

/** KubeVirt's printable status in lower-case words: `Stopped` → `stopped`, `ErrorUnschedulable` → `error unschedulable`. */
function powerText(printable: string): string {
  return printable.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
}

export function printPool(
  terminal: Terminal,
  pool: PoolView,
  page: MemberPage<PoolView['members'][number]>,
): void {
  const { paint } = terminal;
  const count = pool.counts.members;
  terminal.print(
    `${paint.bold(pool.name)}  (ns/${pool.namespace}, ${count} member${count === 1 ? '' : 's'}; ${settingsText(pool)})`,
  );
  for (const member of page.members) {
    const holder = holderColumn(member.state);
    const shown =
      member.state.kind === 'free' ? paint.green(holder.padEnd(25)) : paint.yellow(holder.padEnd(25));
    terminal.print(`  ${member.name.padEnd(25)}${shown}${powerText(member.power)}`);
  }
  const pageLine = memberPageLine(page);
  if (pageLine !== undefined) terminal.print(`  ${paint.dim(pageLine)}`);
}

export function table(rows: string[][]): string[] {
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** The per-node capacity table, as `pool plan` prints it. */
export function capacityTable(rows: readonly CapacityRow[]): string[] {
  const header = ['NODE', 'RESOURCE', 'KIND', 'ALLOCATABLE', 'IN USE', 'FREE', 'PER MEMBER', 'HOSTS'];
  return table([
    header,
    ...rows.map((row) => [
      row.excluded ? `${row.node} (${row.excluded})` : row.node,
      row.resource,
      row.kind,
      String(row.allocatable),
      String(row.inUse),
      String(row.free),
      String(row.perMember),
      String(row.hostsMembers),
    ]),
  ]);
}

export function planSummary(plan: AdmissionPlan, golden: string): string {
  if (plan.needs.length === 0) return `${plan.size} members of "${golden}" fit: it asks for no host devices`;
  const needs = plan.needs.map((need) => `${need.perMember} × ${need.resource}`).join(', ');
  const verdict = plan.kind === 'admit' ? 'fit' : 'do not fit';
  return `${plan.size} members of "${golden}" ${verdict}: each needs ${needs} on one node; the nodes can host ${plan.fits ?? plan.size} now`;
}

function sessionText(member: PoolStatus['members'][number]): string {
  return member.session === 'none' ? '-' : member.session;
}

/** A scheduled pool's lines in `pool status`: the period, the next change, the targets and what is under way. */
export function scheduleLines(schedule: NonNullable<PoolStatus['schedule']>): string[] {
  const period = schedule.period === null ? 'outside every period' : `period ${schedule.period}`;
  const warming = schedule.warmingFor === null ? '' : `, warming for ${schedule.warmingFor}`;
  const next = schedule.nextChange
    ? `; next: ${schedule.nextChange.period ?? 'off hours'} at ${new Date(schedule.nextChange.at).toLocaleString('en-GB', { timeZone: schedule.timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit' })}`
    : '';
  const { cloning, starting, stopping, removing, settling } = schedule.underway;
  const underway = Object.entries({ cloning, starting, stopping, removing, settling })
    .filter(([, count]) => count > 0)
    .map(([what, count]) => `${count} ${what}`);
  const lines = [
    `schedule (${schedule.timeZone}): ${period}${warming}${next}`,
    `targets: ${schedule.targets.size} members, ${schedule.targets.freeRunning} free running (plain size ${schedule.plainSize}); under way: ${underway.length === 0 ? 'nothing' : underway.join(', ')}`,
  ];
  if (schedule.failure) {
    lines.push(
      `keeper failing (${schedule.failure.attempts} in a row, retry at ${schedule.failure.retryAt}): ${schedule.failure.error}`,
    );
  }
  return lines;
}

/** The lines `pool status` prints for one reading of a pool. */
export function poolStatusLines(
  status: PoolStatus,
  page: MemberPage<PoolStatus['members'][number]> = pageOfMembers(status.members, nameOfStatusMember, {
    limit: undefined,
    after: undefined,
  }),
): string[] {
  const count = status.members.length;
  const spares =
    status.minReady === null
      ? `${status.warm} warm, no spares set`
      : `${status.warm}/${status.minReady} warm${status.short > 0 ? ` (${status.short} short)` : ''}`;
  const header = `${status.name}  (${status.kind}, ns/${status.namespace}, ${count} member${count === 1 ? '' : 's'})  ${spares}  waiters ${status.waiters}`;
  const rows = page.members.map((member) => [
    member.name,
    member.entitlement === 'not-entitled' ? `${member.holder} (not entitled)` : (member.holder ?? 'free'),
    member.phase,
    sessionText(member),
    member.spare ? 'spare' : member.warm ? 'warm' : '-',
  ]);
  const pageLine = memberPageLine(page);
  return [
    header,
    ...(status.schedule ? scheduleLines(status.schedule) : []),
    ...(status.rollOut ? [rolloutLine(status.rollOut)] : []),
    ...table([['MEMBER', 'HOLDER', 'PHASE', 'SESSION', 'WARM'], ...rows]),
    ...(pageLine === undefined ? [] : [pageLine]),
  ];
}

export const nameOfStatusMember = (member: PoolStatus['members'][number]) => member.name;
