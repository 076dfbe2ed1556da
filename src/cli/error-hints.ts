import { isVdiError } from '../errors.js';

/**
 * The CLI's own next step for an SDK failure, in terms of its commands and flags, appended to the `error:` line;
 * `undefined` when the SDK's message already says all there is.
 */
export function cliHintFor(error: unknown, words: readonly string[]): string | undefined {
  if (!isVdiError(error)) return undefined;
  const command = words.join(' ');
  const pool = typeof error.details.pool === 'string' ? error.details.pool : 'POOL';
  switch (error.code) {
    case 'GOLDEN_NOT_FOUND':
      return 'Pass -n NAMESPACE where the golden VM lives.';
    case 'NO_FREE_MEMBER':
      return `Free one with "corral-vdi unassign MEMBER", or grow it with "corral-vdi pool resize ${pool} --size N".`;
    case 'USER_LIMIT_REACHED':
      return 'Release one with "corral-vdi unassign MEMBER".';
    case 'POOL_IN_USE':
      return command === 'pool delete'
        ? 'Unassign them with "corral-vdi unassign MEMBER", or run it again with --force.'
        : 'Unassign members with "corral-vdi unassign MEMBER" first.';
    case 'CLONE_TIMEOUT':
      return 'If the clones are only slow, run it again with a longer --clone-timeout.';
    case 'CLUSTER_UNAVAILABLE':
      return error.details.broker !== undefined
        ? undefined
        : 'Check --kubeconfig and --context; for the local control plane, see "corral-vdi dev-cluster status".';
    default:
      return undefined;
  }
}
