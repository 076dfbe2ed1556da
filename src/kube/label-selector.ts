/** One requirement of an equality-based label selector: `key`, `!key`, `key=value` or `key!=value`. */
export type LabelRequirement =
  | { key: string; op: 'exists' | 'absent' }
  | { key: string; op: 'equals' | 'differs'; value: string };

/**
 * Parses an equality-based label selector (`a`, `!a`, `a=b`, `a==b`, `a!=b`, joined by commas); `undefined` for
 * anything else, such as the set-based `a in (b,c)`, which only the apiserver then answers.
 */
export function parseLabelSelector(selector: string): LabelRequirement[] | undefined {
  const requirements: LabelRequirement[] = [];
  for (const part of selector.split(',')) {
    const term = part.trim();
    if (term === '') continue;
    if (/[()\s]/.test(term)) return undefined;
    const equality = /^([^=!]+?)(==|=|!=)([^=!]*)$/.exec(term);
    if (equality) {
      const [, key = '', op, value = ''] = equality;
      requirements.push({ key, op: op === '!=' ? 'differs' : 'equals', value });
    } else if (/^![^=!]+$/.test(term)) requirements.push({ key: term.slice(1), op: 'absent' });
    else if (/^[^=!]+$/.test(term)) requirements.push({ key: term, op: 'exists' });
    else return undefined;
  }
  return requirements;
}

/** Whether `labels` meet every requirement. */
export function matchesLabels(
  requirements: readonly LabelRequirement[],
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  return requirements.every((requirement) => {
    const value = labels?.[requirement.key];
    if (requirement.op === 'equals' || requirement.op === 'differs')
      return (value === requirement.value) === (requirement.op === 'equals');
    return (value !== undefined) === (requirement.op === 'exists');
  });
}

/**
 * Whether every object `narrower` selects is also selected by `wider`, as far as each requirement of `wider` is
 * repeated or implied (`a=b` implies `a`) by one of `narrower`: a cache of `wider` can answer a list of `narrower`.
 */
export function isWithinSelector(
  narrower: readonly LabelRequirement[],
  wider: readonly LabelRequirement[],
): boolean {
  return wider.every((needed) =>
    narrower.some((given) => {
      if (given.key !== needed.key) return false;
      if (needed.op === 'exists') return given.op === 'exists' || given.op === 'equals';
      if (needed.op === 'absent') return given.op === 'absent';
      if (given.op !== 'equals' && given.op !== 'differs') return false;
      return given.op === needed.op && given.value === needed.value;
    }),
  );
}
