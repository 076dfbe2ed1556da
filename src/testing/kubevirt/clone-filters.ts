/**
 * Keeps the entries of a label or annotation map that a VirtualMachineClone's filters let through, the way
 * KubeVirt's clone controller decides:
 * - no filters (`undefined`) keeps everything; an empty list keeps nothing;
 * - `*` alone matches every key; any other filter is a regular expression searched anywhere in the key;
 * - a filter starting with `!` excludes what it matches, and exclusion wins over inclusion.
 * A filter that is not a valid expression matches nothing.
 */
export function filterClonedKeys(
  entries: Readonly<Record<string, string>> | undefined,
  filters: readonly string[] | undefined,
): Record<string, string> {
  if (entries === undefined) return {};
  if (filters === undefined) return { ...entries };
  const include: RegExp[] = [];
  const exclude: RegExp[] = [];
  for (const filter of filters) {
    if (filter === '*') include.push(/.*/);
    else if (filter.startsWith('!')) pushPattern(exclude, filter.slice(1));
    else pushPattern(include, filter);
  }
  const kept: Record<string, string> = {};
  for (const [key, value] of Object.entries(entries)) {
    if (include.some((pattern) => pattern.test(key)) && !exclude.some((pattern) => pattern.test(key)))
      kept[key] = value;
  }
  return kept;
}

function pushPattern(into: RegExp[], source: string): void {
  try {
    into.push(new RegExp(source));
  } catch {
    // KubeVirt logs a filter that does not compile and lets it match nothing.
  }
}
