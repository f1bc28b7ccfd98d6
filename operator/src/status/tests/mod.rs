mod desired;
mod kueue;
mod progress;
mod properties;
mod shards;
mod size;
mod suspended;
mod table;
