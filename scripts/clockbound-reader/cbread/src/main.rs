// Reads a segment with ClockBound's own ShmReader and ClockErrorBound::now().
use clock_bound_shm::ShmReader;
use std::ffi::CString;
fn main() {
    let path = std::env::args().nth(1).expect("usage: cbread PATH [N]");
    let n: usize = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(1);
    let cpath = CString::new(path).unwrap();
    let mut reader = match ShmReader::new(cpath.as_c_str()) {
        Ok(r) => r,
        Err(e) => { println!("error {:?}", e); std::process::exit(1) }
    };
    for _ in 0..n {
        match reader.snapshot().and_then(|s| s.now()) {
            Ok((e, l, st)) => {
                let w = (l.tv_sec() - e.tv_sec()) * 1_000_000_000 + (l.tv_nsec() - e.tv_nsec());
                println!("status={:?} width_ns={} earliest={}.{:09}", st, w, e.tv_sec(), e.tv_nsec());
            }
            Err(e) => println!("error {:?}", e),
        }
        if n > 1 { std::thread::sleep(std::time::Duration::from_millis(100)); }
    }
}
