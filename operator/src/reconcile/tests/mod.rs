mod build;
mod pod;
mod writers;
mod shard_reads;
