import type { DashboardKit } from '../respond';
import { page } from '../respond';
import { csvUpload, importProgress, importUpload } from '../upload';
import { addContactAction, deleteContactAction, editContactAction, editContactPage, newContactPage, resubscribeAction, unsubscribeAction } from './contact-form';
import { contactPage, contactSearchPage, contactsPage } from './contacts';
import { importMappedAction, mappingPage, uploadForMappingAction } from './list-import';
import { createListAction, deleteListAction, deleteListPage, exportListAction, listPage, newListPage, renameListAction, renameListPage } from './lists';
import {
  countAction,
  createSegmentAction,
  deleteSegmentAction,
  exportSegmentAction,
  membersPage,
  newSegmentPage,
  segmentPage,
  updateSegmentAction,
} from './segments';

/** Lists, contacts, imports and segments (src/dashboard/index.tsx mounts each area). */
export function mountAudiencePages({ router: r, deps, signedIn, requireCsrf, form }: DashboardKit): void {
  r.get('/contacts', signedIn, page(contactsPage, 'contacts'));
  r.get('/contacts/search', signedIn, page(contactSearchPage, 'contacts'));
  r.get('/contacts/imports.json', signedIn, importProgress);
  r.post('/contacts/import', signedIn, ...importUpload(deps, requireCsrf));
  r.get('/contacts/:id', signedIn, page(contactPage, 'contacts'));
  r.get('/contacts/:id/edit', signedIn, page(editContactPage, 'contacts'));
  r.post('/contacts/:id/edit', form, signedIn, requireCsrf, page(editContactAction, 'contacts'));
  r.post('/contacts/:id/delete', form, signedIn, requireCsrf, page(deleteContactAction, 'contacts'));
  r.post('/contacts/:id/unsubscribe', form, signedIn, requireCsrf, page(unsubscribeAction, 'contacts'));
  r.post('/contacts/:id/resubscribe', form, signedIn, requireCsrf, page(resubscribeAction, 'contacts'));

  r.get('/lists/new', signedIn, page(newListPage, 'contacts'));
  r.post('/lists/new', form, signedIn, requireCsrf, page(createListAction, 'contacts'));
  r.get('/lists/:id', signedIn, page(listPage, 'contacts'));
  r.get('/lists/:id/edit', signedIn, page(renameListPage, 'contacts'));
  r.post('/lists/:id/edit', form, signedIn, requireCsrf, page(renameListAction, 'contacts'));
  r.get('/lists/:id/delete', signedIn, page(deleteListPage, 'contacts'));
  r.post('/lists/:id/delete', form, signedIn, requireCsrf, page(deleteListAction, 'contacts'));
  r.get('/lists/:id/export.csv', signedIn, page(exportListAction, 'contacts'));
  r.get('/lists/:id/contacts/new', signedIn, page(newContactPage, 'contacts'));
  r.post('/lists/:id/contacts/new', form, signedIn, requireCsrf, page(addContactAction, 'contacts'));
  // The token is read once the multipart form is parsed (it is one of its fields).
  r.post('/lists/:id/import', signedIn, csvUpload(deps), requireCsrf, page(uploadForMappingAction, 'contacts'));
  r.get('/lists/:id/import/:token', signedIn, page(mappingPage, 'contacts'));
  r.post('/lists/:id/import/:token', form, signedIn, requireCsrf, page(importMappedAction, 'contacts'));

  r.get('/segments/new', signedIn, page(newSegmentPage, 'contacts'));
  r.post('/segments/new', form, signedIn, requireCsrf, page(createSegmentAction, 'contacts'));
  r.get('/segments/count', signedIn, countAction);
  r.get('/segments/:id', signedIn, page(segmentPage, 'contacts'));
  r.post('/segments/:id', form, signedIn, requireCsrf, page(updateSegmentAction, 'contacts'));
  r.post('/segments/:id/delete', form, signedIn, requireCsrf, page(deleteSegmentAction, 'contacts'));
  r.get('/segments/:id/members', signedIn, page(membersPage, 'contacts'));
  r.get('/segments/:id/export.csv', signedIn, page(exportSegmentAction, 'contacts'));
}
