import { z } from 'zod';
import { id } from '../../http/fields';
import { intId } from '../shared/schemas';

/** Herald extension: `?country_id=` narrows states and cities, `?state_id=` narrows cities (and states to its country). */
export const geographyQuery = z.object({
  country_id: id().optional().meta({ description: 'only the states and cities of this country' }),
  state_id: id().optional().meta({ description: 'only the cities of this state (and the states of its country)' }),
});
export type GeographyFilter = z.infer<typeof geographyQuery>;

export const countryRecord = z.strictObject({
  id: intId(),
  name: z.string(),
  iso_code: z.string().meta({ description: 'ISO 3166-1 alpha-2', example: 'GB' }),
  phone_code: z
    .string()
    .meta({ description: 'dialling code as the package gives it: mostly digits (`44`), some `+1-684`', example: '44' }),
});

export const stateRecord = z.strictObject({
  id: intId(),
  country_id: intId(),
  name: z.string(),
  iso_code: z.string().meta({ description: 'ISO 3166-2 subdivision code within the country', example: 'ENG' }),
});

export const cityRecord = z.strictObject({
  id: intId(),
  country_id: intId(),
  state_id: intId(),
  name: z.string(),
});

export const geographyMessage = z.object({
  countries: z.array(countryRecord),
  states: z.array(stateRecord),
  cities: z.array(cityRecord),
});
