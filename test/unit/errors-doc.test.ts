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

  it("lists the five messages of the original's troubleshooting guide, each with the code that carries it", () => {
    const section = page.slice(page.indexOf("## The original's messages"));
    const rows = section.split('\n').filter((line) => line.startsWith('| `'));
    expect(
      rows.map((line) =>
        line
          .split('|')
          .slice(1, 3)
          .map((cell) => cell.trim().replaceAll('`', '')),
      ),
    ).toEqual([
      ['golden VM "X" not found', 'GOLDEN_NOT_FOUND'],
      ['timed out ... waiting for the clone to produce VM', 'CLONE_TIMEOUT'],
      ['pool has no free members', 'NO_FREE_MEMBER'],
      ['insufficient device capacity for "X"', 'INSUFFICIENT_CAPACITY'],
      ['device admission failed', 'INSUFFICIENT_CAPACITY'],
    ]);
  });
});
