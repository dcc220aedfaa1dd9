! manual_regions_f.f90 — otfx.h's regions and phases from Fortran through the otfx_f module.
program manual_regions_f
  use mpi
  use otfx_f
  implicit none
  integer :: ierror, i
  call MPI_Init(ierror)
  do i = 1, 5
    call otfx_region_begin('solve')
    call otfx_region_begin('step   ')
    call MPI_Barrier(MPI_COMM_WORLD, ierror)
    call otfx_region_end('step')
    call otfx_region_end('solve')
  end do
  call otfx_phase('done')
  call MPI_Finalize(ierror)
end program manual_regions_f
