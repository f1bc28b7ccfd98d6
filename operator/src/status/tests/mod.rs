mod desired;
mod progress;
mod properties;
mod shards;
mod size;
mod suspended;
mod table;
