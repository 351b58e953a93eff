//! The I/O schedulers behind the elevator seam (`super::elevator`), one
//! file each as block/ has them: mq-deadline (block/mq-deadline.c), kyber
//! (block/kyber-iosched.c), BFQ (block/bfq-iosched.c, block/bfq-wf2q.c).

pub mod bfq;
pub mod kyber;
pub mod mq_deadline;
