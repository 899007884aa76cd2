/* transcode IN.wevents OUT.wevents FMT - every chunk of an events file re-packed in packing FMT (3
 * or 4), one zstd frame at level 1, checksummed: the same records in another packing, so that
 * `weft info`, `report --memory` and `convert` can be compared on both (bench/RESULTS.md, issue 21,
 * h22/memfloor). Copy the trace directory, then transcode its .wevents files into the copy.
 * Build: gcc -O2 -I SRC/src -I SRC/include transcode.c -lzstd -o transcode */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include "format/pack.h"
int main(int argc,char**argv){
 FILE*f=fopen(argv[1],"rb"); fseek(f,0,SEEK_END); long len=ftell(f); fseek(f,0,SEEK_SET);
 unsigned char*d=malloc(len); if(fread(d,1,len,f)!=(size_t)len) return 1; fclose(f);
 FILE*o=fopen(argv[2],"wb"); int fmt=atoi(argv[3]);
 fwrite(d,1,sizeof(struct weft_file_header),o);
 size_t off=sizeof(struct weft_file_header);
 while(off+sizeof(struct weft_chunk_header)<=(size_t)len){
  struct weft_chunk_header h; memcpy(&h,d+off,sizeof h); off+=sizeof h;
  uint8_t*p=d+off; size_t pl=h.stored_size; uint8_t*tmp=malloc(weft_pack_bound(h.raw_size/8)+16);
  if(h.flags&WEFT_CHUNK_ZSTD){pl=ZSTD_decompress(tmp,weft_pack_bound(h.raw_size/8)+16,p,pl);p=tmp;}
  off+=h.stored_size;
  int in=weft_chunk_packing(h.flags); if(!in){fprintf(stderr,"unpacked chunk\n");return 1;}
  size_t n=h.raw_size/8; uint64_t*w=malloc(n*8+8);
  if(weft_unpack(p,pl,w,n,in,1)!=n){fprintf(stderr,"bad chunk\n");return 1;}
  uint8_t*pk=malloc(weft_pack_bound(n)),*scr=malloc(weft_pack4_scratch(n)+3*weft_pack_bound(n));
  uint32_t ev=0,dr=0; struct weft_index_rec ix;
  size_t L= fmt==4? weft_pack4_indexed(w,n,pk,&ev,&dr,&ix,scr) : weft_pack3_indexed(w,n,pk,&ev,&dr,&ix,scr,scr+weft_pack_bound(n));
  if(ev!=h.events||dr!=h.dropped){fprintf(stderr,"counts differ\n");return 1;}
  uint8_t*z=malloc(ZSTD_compressBound(L)); size_t zl=ZSTD_compress(z,ZSTD_compressBound(L),pk,L,1);
  h.flags=WEFT_CHUNK_SUM|(fmt==4?WEFT_CHUNK_PACKED4:WEFT_CHUNK_PACKED3); const void*pay=pk; size_t st=L;
  if(!ZSTD_isError(zl)&&zl<L){h.flags|=WEFT_CHUNK_ZSTD;pay=z;st=zl;}
  h.stored_size=(uint32_t)st; h.checksum=weft_chunk_sum(h.flags,pay,st);
  fwrite(&h,sizeof h,1,o); fwrite(pay,1,st,o);
 }
 fclose(o); return 0;}
