import { loadYaml } from '@kubernetes/client-node';
import { VdiError } from '../errors.js';

/**
 * Reads a schedule written as YAML (or JSON), as `pool set --schedule-file` takes it. It only parses:
 * `parsePoolSchedule` checks the fields.
 *
 * @throws {@link VdiError} `INVALID_INPUT` when the text is not YAML.
 * @category schedules
 */
export function readScheduleText(text: string, source: string): unknown {
  try {
    return loadYaml(text);
  } catch (error) {
    throw new VdiError('INVALID_INPUT', `${source} is not YAML: ${(error as Error).message.split('\n')[0]}`, {
      details: { source },
      cause: error,
    });
  }
}
