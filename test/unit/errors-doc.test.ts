import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { httpStatusByCode } from '../../src/errors.js';

const page = readFileSync(resolve(import.meta.dirname, '../../docs/errors.md'), 'utf8');

function documentedStatuses(): Record<string, number> {
  const rows = page.split('\n').filter((line) => /^\| `[A-Z_]+`/.test(line));
  return Object.fromEntries(
    rows.map((line) => {
      const [code = '', status = ''] = line
        .split('|')
        .slice(1, 3)
        .map((cell) => cell.trim());
      return [code.replaceAll('`', ''), Number(status)];
    }),
  );
}

describe('docs/errors.md', () => {
  it('lists every error code with the HTTP status the broker answers, and nothing else', () => {
    expect(documentedStatuses()).toEqual({ ...httpStatusByCode });
  });
});
