mod desired;
mod progress;
mod properties;
mod shards;
mod size;
mod table;
