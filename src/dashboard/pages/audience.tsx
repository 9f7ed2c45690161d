import type { DashboardKit } from '../respond';
import { page } from '../respond';
import { importProgress, importUpload } from '../upload';
import { contactPage, contactSearchPage, contactsPage } from './contacts';

/** Lists, contacts, imports and segments (src/dashboard/index.tsx mounts each area). */
export function mountAudiencePages({ router: r, deps, signedIn, requireCsrf }: DashboardKit): void {
  r.get('/contacts', signedIn, page(contactsPage, 'contacts'));
  r.get('/contacts/search', signedIn, page(contactSearchPage, 'contacts'));
  r.get('/contacts/imports.json', signedIn, importProgress);
  r.post('/contacts/import', signedIn, ...importUpload(deps, requireCsrf));
  r.get('/contacts/:id', signedIn, page(contactPage, 'contacts'));
}
