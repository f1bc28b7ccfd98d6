mod desired;
mod progress;
mod properties;
mod retry;
mod shards;
mod size;
mod suspended;
mod table;
