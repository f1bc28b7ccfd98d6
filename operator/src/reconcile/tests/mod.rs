mod shard_reads;
mod writers;
