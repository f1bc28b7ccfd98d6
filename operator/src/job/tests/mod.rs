mod build;
mod pod;
