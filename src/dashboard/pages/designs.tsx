import { page, type DashboardKit } from '../respond';
import {
  convertDesignAction,
  editDesignPage,
  newDesignPage,
  saveDesignAction,
  savedPreview,
  startPreview,
  typedPreview,
  updateDesignAction,
} from './design-editor';
import { confirmDeletePage, deleteDesignAction, libraryPage } from './design-library';

/**
 * The account's designs (src/dashboard/index.tsx mounts each area): the library
 * (design-library.tsx) and a page per design with the editor of its format and its preview
 * (design-editor.tsx). Forms that carry a design's source take the design-sized body parser.
 */
export function mountDesignPages({ router: r, signedIn, requireCsrf, form, largeForm }: DashboardKit): void {
  r.get('/designs', signedIn, page(libraryPage, 'designs'));
  r.get('/designs/new', signedIn, page(newDesignPage, 'designs'));
  r.post('/designs/new', largeForm, signedIn, requireCsrf, page(saveDesignAction, 'designs'));
  r.get('/designs/preview', signedIn, page(startPreview, 'designs'));
  r.post('/designs/preview', largeForm, signedIn, requireCsrf, page(typedPreview, 'designs'));
  r.get('/designs/:id/edit', signedIn, page(editDesignPage, 'designs'));
  r.post('/designs/:id/edit', largeForm, signedIn, requireCsrf, page(updateDesignAction, 'designs'));
  r.post('/designs/:id/convert', largeForm, signedIn, requireCsrf, page(convertDesignAction, 'designs'));
  r.get('/designs/:id/preview', signedIn, page(savedPreview, 'designs'));
  r.get('/designs/:id/delete', signedIn, page(confirmDeletePage, 'designs'));
  r.post('/designs/:id/delete', form, signedIn, requireCsrf, page(deleteDesignAction, 'designs'));
}
