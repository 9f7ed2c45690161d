import { guarded } from '../permissions';
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
  const g = guarded(r, signedIn);
  g.get('/contacts', 'read', page(contactsPage, 'contacts'));
  g.get('/contacts/search', 'read', page(contactSearchPage, 'contacts'));
  g.get('/contacts/imports.json', 'read', importProgress);
  g.post('/contacts/import', 'audience:manage', ...importUpload(deps, requireCsrf));
  g.get('/contacts/:id', 'read', page(contactPage, 'contacts'));
  g.get('/contacts/:id/edit', 'audience:manage', page(editContactPage, 'contacts'));
  g.post('/contacts/:id/edit', 'audience:manage', form, requireCsrf, page(editContactAction, 'contacts'));
  g.post('/contacts/:id/delete', 'audience:manage', form, requireCsrf, page(deleteContactAction, 'contacts'));
  g.post('/contacts/:id/unsubscribe', 'settings:manage', form, requireCsrf, page(unsubscribeAction, 'contacts'));
  g.post('/contacts/:id/resubscribe', 'settings:manage', form, requireCsrf, page(resubscribeAction, 'contacts'));

  g.get('/lists/new', 'audience:manage', page(newListPage, 'contacts'));
  g.post('/lists/new', 'audience:manage', form, requireCsrf, page(createListAction, 'contacts'));
  g.get('/lists/:id', 'read', page(listPage, 'contacts'));
  g.get('/lists/:id/edit', 'audience:manage', page(renameListPage, 'contacts'));
  g.post('/lists/:id/edit', 'audience:manage', form, requireCsrf, page(renameListAction, 'contacts'));
  g.get('/lists/:id/delete', 'audience:manage', page(deleteListPage, 'contacts'));
  g.post('/lists/:id/delete', 'audience:manage', form, requireCsrf, page(deleteListAction, 'contacts'));
  g.get('/lists/:id/export.csv', 'audience:manage', page(exportListAction, 'contacts'));
  g.get('/lists/:id/contacts/new', 'audience:manage', page(newContactPage, 'contacts'));
  g.post('/lists/:id/contacts/new', 'audience:manage', form, requireCsrf, page(addContactAction, 'contacts'));
  // The token is read once the multipart form is parsed (it is one of its fields).
  g.post('/lists/:id/import', 'audience:manage', csvUpload(deps), requireCsrf, page(uploadForMappingAction, 'contacts'));
  g.get('/lists/:id/import/:token', 'audience:manage', page(mappingPage, 'contacts'));
  g.post('/lists/:id/import/:token', 'audience:manage', form, requireCsrf, page(importMappedAction, 'contacts'));

  g.get('/segments/new', 'audience:manage', page(newSegmentPage, 'contacts'));
  g.post('/segments/new', 'audience:manage', form, requireCsrf, page(createSegmentAction, 'contacts'));
  g.get('/segments/count', 'read', countAction);
  g.get('/segments/:id', 'read', page(segmentPage, 'contacts'));
  g.post('/segments/:id', 'audience:manage', form, requireCsrf, page(updateSegmentAction, 'contacts'));
  g.post('/segments/:id/delete', 'audience:manage', form, requireCsrf, page(deleteSegmentAction, 'contacts'));
  g.get('/segments/:id/members', 'read', page(membersPage, 'contacts'));
  g.get('/segments/:id/export.csv', 'audience:manage', page(exportSegmentAction, 'contacts'));
}
