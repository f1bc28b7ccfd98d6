//! Prints the `Task` CustomResourceDefinition as YAML on stdout.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    match crds::crd_yaml() {
        Ok(yaml) => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(yaml.as_bytes()).and_then(|()| out.flush()) {
                eprintln!("crdgen: cannot write the CRD: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crdgen: cannot serialize the CRD: {e}");
            ExitCode::FAILURE
        }
    }
}
