mod build;
mod pod;
mod shard_reads;
mod writers;
