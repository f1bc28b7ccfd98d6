mod grant;
mod report;
mod resolve;
mod sweep;
