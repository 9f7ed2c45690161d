import { guarded } from '../permissions';
import type { DashboardKit } from '../respond';
import { page } from '../respond';
import { keptReportPage, pauseAction, pickWinnerAction } from './send';
import { audienceCountJson, editSendPage, newSendPage, saveSendAction } from './send-form';
import { sendsCalendarPage, sendsListPage } from './send-list';
import {
  deleteSendAction,
  deleteSendPage,
  duplicateSendAction,
  previewFrame,
  scheduleAction,
  sendNowAction,
  sendNowPage,
  sendPreviewPage,
  sendViewPage,
  testSendAction,
  unscheduleAction,
} from './send-view';

/**
 * Single sends (src/dashboard/index.tsx mounts each area): the list and its calendar, the editor,
 * each send's page (its actions, preview and test send; its report once it has started).
 */
export function mountSendPages({ router: r, signedIn, requireCsrf, form, largeForm }: DashboardKit): void {
  const g = guarded(r, signedIn);
  g.get('/sends', 'read', page(sendsListPage, 'sends'));
  g.get('/sends/calendar', 'read', page(sendsCalendarPage, 'sends'));
  g.get('/sends/audience-count', 'read', page(audienceCountJson, 'sends'));
  g.get('/sends/new', 'campaigns:manage', page(newSendPage, 'sends'));
  g.post('/sends/new', 'campaigns:manage', largeForm, requireCsrf, page(saveSendAction, 'sends'));
  g.get('/sends/:utr', 'read', page(sendViewPage, 'sends'));
  g.get('/sends/:utr/edit', 'campaigns:manage', page(editSendPage, 'sends'));
  g.post('/sends/:utr/edit', 'campaigns:manage', largeForm, requireCsrf, page(saveSendAction, 'sends'));
  g.get('/sends/:utr/preview', 'read', page(sendPreviewPage, 'sends'));
  g.get('/sends/:utr/preview/frame', 'read', page(previewFrame, 'sends'));
  g.post('/sends/:utr/test', 'campaigns:manage', form, requireCsrf, page(testSendAction, 'sends'));
  g.post('/sends/:utr/schedule', 'campaigns:send', form, requireCsrf, page(scheduleAction, 'sends'));
  g.post('/sends/:utr/unschedule', 'campaigns:send', form, requireCsrf, page(unscheduleAction, 'sends'));
  g.get('/sends/:utr/send-now', 'campaigns:send', page(sendNowPage, 'sends'));
  g.post('/sends/:utr/send-now', 'campaigns:send', form, requireCsrf, page(sendNowAction, 'sends'));
  g.get('/sends/:utr/delete', 'campaigns:manage', page(deleteSendPage, 'sends'));
  g.post('/sends/:utr/delete', 'campaigns:manage', form, requireCsrf, page(deleteSendAction, 'sends'));
  g.post('/sends/:utr/duplicate', 'campaigns:manage', form, requireCsrf, page(duplicateSendAction, 'sends'));
  g.get('/sends/:utr/reports/:eventId', 'read', page(keptReportPage, 'sends'));
  g.post('/sends/:utr/ab/winner', 'campaigns:send', form, requireCsrf, page(pickWinnerAction, 'sends'));
  g.post('/sends/:utr/pause', 'campaigns:send', form, requireCsrf, page(pauseAction('pause'), 'sends'));
  g.post('/sends/:utr/resume', 'campaigns:send', form, requireCsrf, page(pauseAction('resume'), 'sends'));
}
