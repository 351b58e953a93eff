// Small benchmark for flashpath's swiotlb costs: memcpy bandwidth of
// bounce-sized copies, uncontended spinlock acquire/release, and the
// cross-core cache-line transfer of a lock (ping-pong between two threads).
// Build and run: cc -O2 -pthread benches/host/swiotlb_costs.c -o /tmp/swiotlb_costs && /tmp/swiotlb_costs
// Results feed profiles/hosts/swiotlb-x86.toml (memcpy, lock_acquire, lock_release).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof s,&s);}
static _Alignas(64) atomic_int lock; static _Alignas(64) atomic_int turn;
static void spin_lock(atomic_int*l){while(atomic_exchange_explicit(l,1,memory_order_acquire))while(atomic_load_explicit(l,memory_order_relaxed));}
static void spin_unlock(atomic_int*l){atomic_store_explicit(l,0,memory_order_release);}
#define PP 2000000
static void*pong(void*a){pin(1);for(int i=0;i<PP;i++){while(atomic_load(&turn)!=1);spin_lock(&lock);spin_unlock(&lock);atomic_store(&turn,0);}return 0;}
int main(){
  size_t pool=1<<20; char*src=aligned_alloc(4096,64<<20),*dst=aligned_alloc(4096,4<<20);
  memset(src,1,64<<20);memset(dst,0,4<<20);
  for(size_t sz=4096;sz<=65536;sz*=16){ double best=1e30;
    for(int r=0;r<5;r++){ long n=(256L<<20)/sz; double t0=now();
      for(long i=0;i<n;i++){ size_t so=(i*sz)%(64<<20), d=(i*sz)%(4<<20); memcpy(dst+d,src+so,sz);} 
      double t=(now()-t0)/n; if(t<best)best=t;}
    printf("memcpy %zu B: %.1f ns = %.2f GB/s\n",sz,best,sz/best);}
  pin(0); long N=50000000; double best=1e30;
  for(int r=0;r<3;r++){double t0=now();for(long i=0;i<N;i++){spin_lock(&lock);spin_unlock(&lock);} double t=(now()-t0)/N; if(t<best)best=t;}
  printf("uncontended lock+unlock: %.2f ns\n",best);
  pthread_t th; pthread_create(&th,0,pong,0); double t0=now();
  for(int i=0;i<PP;i++){spin_lock(&lock);spin_unlock(&lock);atomic_store(&turn,1);while(atomic_load(&turn)!=0);} 
  double t=(now()-t0)/PP; pthread_join(th,0);
  printf("ping-pong round trip (2 lock handoffs + 2 turn handoffs): %.1f ns -> per remote line transfer ~%.1f ns\n",t,t/4);
  (void)pool; return 0;}
