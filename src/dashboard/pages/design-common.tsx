import type { Request } from 'express';
import { designRoutes } from '../../resources/designs/designs.router';
import { NOTICES, type DesignFormat } from '../../render/design-formats';
import { routeOf } from './sender-kit';

/**
 * What the design pages share (the library, design-library.tsx; the editors, design-editor.tsx):
 * the API routes their forms run, the words for each format, the id in the URL.
 */
export const SAVE = routeOf(designRoutes, '/designs/save');
export const UPDATE = routeOf(designRoutes, '/designs/update');
export const LIST = routeOf(designRoutes, '/designs/list');
export const DELETE = routeOf(designRoutes, '/designs/delete');
export const PREVIEW = routeOf(designRoutes, '/designs/preview');

export const FORMAT_NAMES: Record<DesignFormat, string> = { blocks: 'Blocks', markdown: 'Markdown', html: 'HTML' };

/** `:id` of the URL, or 0 (which names no design: the API's not found, the 404 page). */
export const designId = (req: Request) => (/^\d{1,9}$/.test(String(req.params.id)) ? Number(req.params.id) : 0);

/**
 * The API's notices after a save travel to the editor's page (post/redirect/get) as keys of
 * NOTICES, never as text: a link cannot make the page say something Herald did not.
 */
export const noticeKeys = (notices: string[]) => (Object.keys(NOTICES) as Array<keyof typeof NOTICES>).filter((k) => notices.includes(NOTICES[k]));

export function noticesOf(req: Request): string[] {
  const raw = req.query.notice;
  const keys = (Array.isArray(raw) ? raw : [raw]).filter((k): k is string => typeof k === 'string');
  return (Object.keys(NOTICES) as Array<keyof typeof NOTICES>).filter((k) => keys.includes(k)).map((k) => NOTICES[k]);
}
