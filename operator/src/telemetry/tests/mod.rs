mod metrics;
