import { guarded } from '../permissions';
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
  const g = guarded(r, signedIn);
  g.get('/designs', 'read', page(libraryPage, 'designs'));
  g.get('/designs/new', 'campaigns:manage', page(newDesignPage, 'designs'));
  g.post('/designs/new', 'campaigns:manage', largeForm, requireCsrf, page(saveDesignAction, 'designs'));
  g.get('/designs/preview', 'campaigns:manage', page(startPreview, 'designs'));
  g.post('/designs/preview', 'campaigns:manage', largeForm, requireCsrf, page(typedPreview, 'designs'));
  g.get('/designs/:id/edit', 'campaigns:manage', page(editDesignPage, 'designs'));
  g.post('/designs/:id/edit', 'campaigns:manage', largeForm, requireCsrf, page(updateDesignAction, 'designs'));
  g.post('/designs/:id/convert', 'campaigns:manage', largeForm, requireCsrf, page(convertDesignAction, 'designs'));
  g.get('/designs/:id/preview', 'campaigns:manage', page(savedPreview, 'designs'));
  g.get('/designs/:id/delete', 'campaigns:manage', page(confirmDeletePage, 'designs'));
  g.post('/designs/:id/delete', 'campaigns:manage', form, requireCsrf, page(deleteDesignAction, 'designs'));
}
