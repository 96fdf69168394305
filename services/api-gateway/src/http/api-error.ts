// ApiError lives in @media/common so that the dashboard router (a library) throws the same class.
export { ApiError, OUTAGE_RETRY_AFTER_SECONDS, type ErrorType } from '@media/common';
