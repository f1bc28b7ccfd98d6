mod build;
mod pod;
mod writers;
