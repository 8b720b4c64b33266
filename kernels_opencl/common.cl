/* Shared by every kernel file: the element type of the program. The host
 * builds this source twice, with -DREAL=float and with -DREAL=double
 * -DPRN_F64=1 (devices with cl_khr_fp64). Sizes and indices are ulong. */
#ifdef PRN_F64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
typedef REAL real;
