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
  r.get('/sends', signedIn, page(sendsListPage, 'sends'));
  r.get('/sends/calendar', signedIn, page(sendsCalendarPage, 'sends'));
  r.get('/sends/audience-count', signedIn, page(audienceCountJson, 'sends'));
  r.get('/sends/new', signedIn, page(newSendPage, 'sends'));
  r.post('/sends/new', largeForm, signedIn, requireCsrf, page(saveSendAction, 'sends'));
  r.get('/sends/:utr', signedIn, page(sendViewPage, 'sends'));
  r.get('/sends/:utr/edit', signedIn, page(editSendPage, 'sends'));
  r.post('/sends/:utr/edit', largeForm, signedIn, requireCsrf, page(saveSendAction, 'sends'));
  r.get('/sends/:utr/preview', signedIn, page(sendPreviewPage, 'sends'));
  r.get('/sends/:utr/preview/frame', signedIn, page(previewFrame, 'sends'));
  r.post('/sends/:utr/test', form, signedIn, requireCsrf, page(testSendAction, 'sends'));
  r.post('/sends/:utr/schedule', form, signedIn, requireCsrf, page(scheduleAction, 'sends'));
  r.post('/sends/:utr/unschedule', form, signedIn, requireCsrf, page(unscheduleAction, 'sends'));
  r.get('/sends/:utr/send-now', signedIn, page(sendNowPage, 'sends'));
  r.post('/sends/:utr/send-now', form, signedIn, requireCsrf, page(sendNowAction, 'sends'));
  r.get('/sends/:utr/delete', signedIn, page(deleteSendPage, 'sends'));
  r.post('/sends/:utr/delete', form, signedIn, requireCsrf, page(deleteSendAction, 'sends'));
  r.post('/sends/:utr/duplicate', form, signedIn, requireCsrf, page(duplicateSendAction, 'sends'));
  r.get('/sends/:utr/reports/:eventId', signedIn, page(keptReportPage, 'sends'));
  r.post('/sends/:utr/ab/winner', form, signedIn, requireCsrf, page(pickWinnerAction, 'sends'));
  r.post('/sends/:utr/pause', form, signedIn, requireCsrf, page(pauseAction('pause'), 'sends'));
  r.post('/sends/:utr/resume', form, signedIn, requireCsrf, page(pauseAction('resume'), 'sends'));
}
