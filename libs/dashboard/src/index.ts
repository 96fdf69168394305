export * from './contract';
export { dashboardRouter, readCookie, CONTENT_SECURITY_POLICY, SESSION_COOKIE, type DashboardDeps } from './router';
export { RequestsView, type RequestQuery } from './requests';
