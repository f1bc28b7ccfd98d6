mod build;
mod writers;
