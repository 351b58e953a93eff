//! The I/O schedulers behind the elevator seam (`super::elevator`), one
//! file each as block/ has them: mq-deadline (block/mq-deadline.c), kyber
//! (block/kyber-iosched.c).

pub mod kyber;
pub mod mq_deadline;
