! mpi_app.f90 - the Fortran bindings (use mpi) for tests/integration/test_mpi.py, on 4 ranks:
!   a blocking ring (tag 1, 1 integer), a nonblocking exchange with both neighbours and one
!   MPI_Waitall (tag 2, 8 integers each, statuses ignored), MPI_Sendrecv with rank xor 1
!   (tag 3, 4 doubles), MPI_Comm_split by parity + MPI_Allreduce on it + MPI_Comm_free,
!   MPI_Bcast from rank 1, MPI_Reduce to rank 2, MPI_Barrier.
program mpi_app
  use mpi
  implicit none
  integer :: ierr, r, n, right, left, a, b, sub, s, sr
  integer :: rq(4), v(8, 2), w(8, 2), st(MPI_STATUS_SIZE)
  double precision :: d(4), e(4)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, n, ierr)
  right = mod(r + 1, n)
  left = mod(r + n - 1, n)
  a = r
  w = r
  if (mod(r, 2) == 0) then
    call MPI_Send(a, 1, MPI_INTEGER, right, 1, MPI_COMM_WORLD, ierr)
    call MPI_Recv(b, 1, MPI_INTEGER, left, 1, MPI_COMM_WORLD, st, ierr)
  else
    call MPI_Recv(b, 1, MPI_INTEGER, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    call MPI_Send(a, 1, MPI_INTEGER, right, 1, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Irecv(v(1, 1), 8, MPI_INTEGER, left, 2, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Irecv(v(1, 2), 8, MPI_INTEGER, right, 2, MPI_COMM_WORLD, rq(2), ierr)
  call MPI_Isend(w(1, 1), 8, MPI_INTEGER, left, 2, MPI_COMM_WORLD, rq(3), ierr)
  call MPI_Isend(w(1, 2), 8, MPI_INTEGER, right, 2, MPI_COMM_WORLD, rq(4), ierr)
  call MPI_Waitall(4, rq, MPI_STATUSES_IGNORE, ierr)
  d = r
  call MPI_Sendrecv(d, 4, MPI_DOUBLE_PRECISION, ieor(r, 1), 3, e, 4, MPI_DOUBLE_PRECISION, ieor(r, 1), 3, &
                    MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(r, 2), r, sub, ierr)
  call MPI_Allreduce(a, s, 1, MPI_INTEGER, MPI_SUM, sub, ierr)
  call MPI_Comm_free(sub, ierr)
  call MPI_Bcast(a, 1, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  call MPI_Reduce(a, sr, 1, MPI_INTEGER, MPI_SUM, 2, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program mpi_app
