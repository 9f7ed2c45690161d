/**
 * One source of a send's audience, as the API names it in `recipient_id` and
 * `exclude_specific_recipient_id`: a contact type's contacts (`contacts_<id>`) or a segment's
 * members (`segments_<id>`). The single-sends service parses them; the fan-out reads them.
 * (Not a recipient token's ref — src/recipient-token.ts — which names one recipient row.)
 */
export interface AudienceRef {
  id: string;
  table: 'contacts_' | 'segments_';
}
