mod result_trust;
mod shard_reads;
